/**
 * Which Python runs the language server, the debug adapter and the CLI tools.
 *
 * Lookup order (documented in the README and tested in tests/extension/interpreter.test.ts):
 *   1. the `tensorsight.python` setting (a workspace value only counts in a trusted workspace);
 *   2. the Microsoft Python extension's active interpreter, when that extension is installed (skipped in an untrusted
 *      workspace, where it may be a virtual environment inside the workspace);
 *   3. `python3` (then `python`) on PATH.
 * The first candidate found is probed: it must be Python >= 3.10 and import debugpy (bundled with the extension, or
 * the interpreter's own). A setting that does not work is an error rather than a silent fallback, so the user learns
 * that their setting is wrong.
 */

export type InterpreterSource = 'setting' | 'pythonExtension' | 'path';

export interface ProbeResult {
  ok: boolean;
  /** e.g. "3.11.9" */
  version?: string;
  executable?: string;
  /** Modules we need that the interpreter cannot import. */
  missing: string[];
  /** Why the probe failed (could not start, too old, crashed). */
  error?: string;
}

export interface InterpreterProvider {
  /** The setting's value (already filtered for workspace trust), or undefined/empty when unset. */
  setting(): string | undefined;
  /** The Python extension's active interpreter path, or undefined when it is absent or has none. */
  pythonExtension(): Promise<string | undefined>;
  /** Absolute path of an executable found on PATH, or undefined. */
  findOnPath(name: string): string | undefined;
  probe(command: string): Promise<ProbeResult>;
}

export type Resolution =
  | { ok: true; command: string; source: InterpreterSource; version?: string }
  | {
      ok: false;
      problem: 'settingBroken' | 'notFound' | 'tooOld' | 'missingModules';
      command?: string;
      detail: string;
    };

export const MINIMUM_PYTHON: readonly [number, number] = [3, 10];
export const REQUIRED_MODULES = ['debugpy'] as const;

export async function resolveInterpreter(provider: InterpreterProvider, trusted: boolean): Promise<Resolution> {
  const candidates: Array<{ source: InterpreterSource; command: () => Promise<string | undefined> }> = [
    { source: 'setting', command: () => Promise.resolve(nonEmpty(provider.setting())) },
    { source: 'pythonExtension', command: () => (trusted ? provider.pythonExtension() : Promise.resolve(undefined)) },
    {
      source: 'path',
      command: () => Promise.resolve(provider.findOnPath('python3') ?? provider.findOnPath('python')),
    },
  ];
  let lastFailure: Resolution | undefined;
  for (const candidate of candidates) {
    const command = await candidate.command();
    if (!command) continue;
    const probe = await provider.probe(command);
    if (probe.ok && probe.missing.length === 0) {
      return { ok: true, command, source: candidate.source, version: probe.version };
    }
    const failure = describeFailure(command, probe, candidate.source);
    if (candidate.source === 'setting') return failure;
    lastFailure ??= failure;
  }
  return lastFailure ?? { ok: false, problem: 'notFound', detail: 'no python3 or python on PATH' };
}

function describeFailure(command: string, probe: ProbeResult, source: InterpreterSource): Resolution {
  if (!probe.ok) {
    const tooOld = probe.version !== undefined && !isSupportedVersion(probe.version);
    if (tooOld) return { ok: false, problem: 'tooOld', command, detail: `Python ${probe.version}` };
    return {
      ok: false,
      problem: source === 'setting' ? 'settingBroken' : 'notFound',
      command,
      detail: probe.error ?? 'the interpreter did not start',
    };
  }
  return { ok: false, problem: 'missingModules', command, detail: probe.missing.join(', ') };
}

export function isSupportedVersion(version: string): boolean {
  const [major, minor] = version.split('.').map((part) => Number.parseInt(part, 10));
  if (major === undefined || minor === undefined || Number.isNaN(major) || Number.isNaN(minor)) return false;
  return major > MINIMUM_PYTHON[0] || (major === MINIMUM_PYTHON[0] && minor >= MINIMUM_PYTHON[1]);
}

/** The Python snippet the probe runs: prints one JSON line with the version, the executable and missing modules. */
/**
 * Run as `python -I -c PROBE_SCRIPT BUNDLED_LIBS`: the first lines drop the working directory (Python 3.10 still
 * prepends it under `-I`) and name the bundled libraries, before anything else is imported, so the probe sees what
 * the isolated server will see and never imports a file from wherever the editor happens to run.
 */
export const PROBE_SCRIPT = [
  'import sys',
  'sys.path[:] = [p for p in sys.path if p not in ("", ".")]',
  'sys.path[:0] = [p for p in sys.argv[1:] if p]',
  'import importlib.util, json',
  `mods = ${JSON.stringify(REQUIRED_MODULES)}`,
  'missing = [m for m in mods if importlib.util.find_spec(m) is None]',
  'print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable, "missing": missing}))',
].join('\n');

/** Reads the probe's output; anything unexpected becomes a failed probe with the reason. */
export function parseProbeOutput(
  stdout: string,
  stderr: string,
  code: number | null,
  spawnError?: string,
): ProbeResult {
  if (spawnError) return { ok: false, missing: [], error: spawnError };
  const line = stdout.trim().split(/\r?\n/).pop() ?? '';
  try {
    const parsed = JSON.parse(line) as { version?: unknown; executable?: unknown; missing?: unknown };
    const version = typeof parsed.version === 'string' ? parsed.version : undefined;
    const missing = Array.isArray(parsed.missing)
      ? parsed.missing.filter((m): m is string => typeof m === 'string')
      : [];
    const executable = typeof parsed.executable === 'string' ? parsed.executable : undefined;
    if (version !== undefined && !isSupportedVersion(version)) {
      return { ok: false, version, executable, missing, error: `Python ${version} is older than 3.10` };
    }
    return { ok: code === 0, version, executable, missing };
  } catch {
    return { ok: false, missing: [], error: (stderr.trim() || `exit status ${String(code)}`).slice(0, 500) };
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}
