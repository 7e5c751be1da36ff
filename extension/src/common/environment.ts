/**
 * The real InterpreterProvider: the setting, the Microsoft Python extension's API, PATH lookup and a probe that runs
 * the candidate interpreter. Kept apart from interpreter.ts so that the resolution order stays a pure function.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type InterpreterProvider, parseProbeOutput, PROBE_SCRIPT, type ProbeResult } from './interpreter';
import { runProcess } from './process';
import { readSettings } from './settings';
import { extensions, workspace } from './vscodeapi';

const PYTHON_EXTENSION_ID = 'ms-python.python';

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
    resolveEnvironment(
      env: { path: string } | string,
    ): Promise<{ executable?: { uri?: { fsPath: string } } } | undefined>;
    onDidChangeActiveEnvironmentPath?: (listener: () => void) => { dispose(): void };
  };
}

export function createInterpreterProvider(bundledLibs: string): InterpreterProvider {
  return {
    setting: () => readSettings().python,
    pythonExtension: activePythonExtensionInterpreter,
    findOnPath: (name) => findOnPath(name, process.env.PATH ?? ''),
    probe: (command) => probeInterpreter(command, bundledLibs),
  };
}

async function activePythonExtensionInterpreter(): Promise<string | undefined> {
  const extension = extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!extension) return undefined;
  try {
    const api = (extension.isActive ? extension.exports : await extension.activate()) as PythonExtensionApi | undefined;
    const environments = api?.environments;
    if (!environments) return undefined;
    const folder = workspace.workspaceFolders()?.[0];
    const active = environments.getActiveEnvironmentPath(folder?.uri);
    if (!active) return undefined;
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  } catch {
    return undefined; // a broken or older Python extension must not stop us: fall back to PATH
  }
}

/** Like `which`: the first executable file named `name` in the PATH-like string. */
export function findOnPath(name: string, pathValue: string): string | undefined {
  const extensionsToTry = process.platform === 'win32' ? ['.exe', ''] : [''];
  for (const dir of pathValue.split(path.delimiter)) {
    if (!dir) continue;
    for (const suffix of extensionsToTry) {
      const candidate = path.join(dir, name + suffix);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) return candidate;
      } catch {
        // not here; keep looking
      }
    }
  }
  return undefined;
}

export async function probeInterpreter(command: string, bundledLibs: string): Promise<ProbeResult> {
  const result = await runProcess(command, ['-I', '-c', PROBE_SCRIPT, bundledLibs], { timeoutMs: 20_000 });
  return parseProbeOutput(result.stdout, result.stderr, result.code, result.spawnError);
}

/** Calls `listener` when the Python extension's active interpreter changes (nothing when it is not installed). */
export async function watchPythonExtension(listener: () => void): Promise<{ dispose(): void } | undefined> {
  const extension = extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!extension) return undefined;
  try {
    const api = (extension.isActive ? extension.exports : await extension.activate()) as PythonExtensionApi | undefined;
    return api?.environments?.onDidChangeActiveEnvironmentPath?.(listener);
  } catch {
    return undefined;
  }
}
