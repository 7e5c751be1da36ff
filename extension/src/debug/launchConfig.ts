/**
 * Turns a "Debug Training" launch configuration (debug type `tensorsight`) into the launch request debugpy's adapter
 * understands, and computes the environment that injects the TensorSight agent into the debuggee:
 *   - PYTHONPATH gains `pyhelpers`, so debugpy loads our pydevd plugin before user code runs;
 *   - TENSORSIGHT_OPTIONS carries the TensorSight launch options as JSON (with the link the first-NaN stop shows);
 *   - TENSORSIGHT_HUB / TENSORSIGHT_TOKEN connect the agent to the language server's hub (when it runs).
 * The request also names our launcher folder (`debugLauncherPath`, pyhelpers/tensorsight/debugpy_start/launcher):
 * debugpy's launcher without the environment report it would build for a log nobody keeps.
 * Pure functions, used by the debug configuration providers and pinned by tests/extension/launchConfig.test.ts.
 * The variable names come from the generated contract (../server/protocol.ts).
 */
import * as path from 'node:path';
import { AgentEnvironment, DEBUG_TRAINING_DEFAULTS } from '../server/protocol';

export const DEBUG_TYPE = 'tensorsight';
export const SESSION_ID_KEY = 'tensorsightSessionId';

export interface TensorSightLaunchConfig {
  type: string;
  request: string;
  name: string;
  program?: string;
  module?: string;
  args?: string[] | string;
  cwd?: string;
  env?: Record<string, string | null>;
  python?: string;
  justMyCode?: boolean;
  console?: string;
  stopOnEntry?: boolean;
  breakOnNonFinite?: boolean;
  options?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What the settings say for the fields a configuration leaves out (`tensorsight.breakOnNonFinite`, `.justMyCode`). */
export interface LaunchDefaults {
  breakOnNonFinite: boolean;
  /** Step over library code (torch, site-packages); false steps into it. */
  justMyCode: boolean;
}

export interface Hub {
  address: string;
  token: string;
}

export interface AgentContext {
  pyhelpers: string;
  /** PATH-like separator of the platform (':' or ';'). */
  separator: string;
  /** The extension host's environment (its PYTHONPATH is kept after ours). */
  baseEnv: Readonly<Record<string, string | undefined>>;
  sessionId: string;
  hub?: Hub;
  /** The editor's display language (vscode.env.language): the agent's stop reasons and messages are in it. */
  locale?: string;
  /**
   * The start of the first-NaN stop's link to View Tensor (panel/tensorLink.ts `viewLinkStart`), passed as the
   * `viewTensorLink` launch option unless the configuration's `options` set one.
   */
  viewLink?: string;
}

/** The options object the agent reads (camelCase keys); the top-level `breakOnNonFinite` wins over `options`. */
export function launchOptions(
  config: TensorSightLaunchConfig,
  breakOnNonFiniteDefault: boolean,
): Record<string, unknown> {
  const options: Record<string, unknown> = { ...(isPlainObject(config.options) ? config.options : {}) };
  if (typeof config.breakOnNonFinite === 'boolean') options.breakOnNonFinite = config.breakOnNonFinite;
  else if (typeof options.breakOnNonFinite !== 'boolean') options.breakOnNonFinite = breakOnNonFiniteDefault;
  return options;
}

/** The debuggee environment: the user's `env` plus the injection variables. A `null` value unsets a variable. */
export function agentEnvironment(
  userEnv: Record<string, string | null> | undefined,
  options: Record<string, unknown>,
  context: AgentContext,
): Record<string, string | null> {
  const env: Record<string, string | null> = { ...(userEnv ?? {}) };
  const existing = 'PYTHONPATH' in env ? env.PYTHONPATH : context.baseEnv.PYTHONPATH;
  const parts = [context.pyhelpers, ...(existing ? existing.split(context.separator) : [])].filter(
    (part, index, all) => part.length > 0 && all.indexOf(part) === index,
  );
  env.PYTHONPATH = parts.join(context.separator);
  const withLink =
    context.viewLink && !('viewTensorLink' in options) ? { ...options, viewTensorLink: context.viewLink } : options;
  env[AgentEnvironment.options] = JSON.stringify(withLink);
  env[AgentEnvironment.session] = context.sessionId;
  if (context.locale && !(AgentEnvironment.locale in env)) env[AgentEnvironment.locale] = context.locale;
  if (context.hub) {
    env[AgentEnvironment.hub] = context.hub.address;
    env[AgentEnvironment.token] = context.hub.token;
  }
  return env;
}

/** A problem that makes the configuration unusable, in words for the user; undefined when it is fine. */
export function launchProblem(config: TensorSightLaunchConfig): string | undefined {
  if (config.request !== 'launch') return 'request';
  if (!config.program && !config.module) return 'program';
  return undefined;
}

/** debugpy's launcher as a "Debug Training" launch runs it (see pyhelpers/tensorsight/debugpy_start). */
export function launcherFolder(pyhelpers: string): string {
  return path.join(pyhelpers, 'tensorsight', 'debugpy_start', 'launcher');
}

/**
 * The launch request for debugpy's adapter (`python -m tensorsight.debugpy_start.adapter`). `justMyCode` is on unless
 * the configuration or the setting turns it off: Step Into on `model(x)` lands in the model's `forward`, not in
 * torch's `Module.__call__` (debugpy treats site-packages and the standard library as library code).
 */
export function toDebugpyLaunch(
  config: TensorSightLaunchConfig,
  python: string,
  defaults: LaunchDefaults,
  context: AgentContext,
): TensorSightLaunchConfig {
  const options = launchOptions(config, defaults.breakOnNonFinite);
  const launch: TensorSightLaunchConfig = {
    ...config,
    type: config.type,
    request: 'launch',
    name: config.name,
    args: config.args ?? [],
    console: config.console ?? DEBUG_TRAINING_DEFAULTS.console,
    justMyCode: typeof config.justMyCode === 'boolean' ? config.justMyCode : defaults.justMyCode,
    python: config.python ?? python,
    env: agentEnvironment(config.env, options, context),
    breakOnNonFinite: options.breakOnNonFinite === true,
    debugLauncherPath: config.debugLauncherPath ?? launcherFolder(context.pyhelpers),
    [SESSION_ID_KEY]: context.sessionId,
  };
  if (config.cwd === undefined) delete launch.cwd;
  delete launch.options; // carried in TENSORSIGHT_OPTIONS; debugpy does not know this key
  return launch;
}

/** The configuration offered for F5 without a launch.json, and as the dynamic configuration for a file. */
export function launchForFile(name: string, program: string, cwd: string | undefined): TensorSightLaunchConfig {
  const config: TensorSightLaunchConfig = { type: DEBUG_TYPE, request: 'launch', name, program, args: [] };
  if (cwd) config.cwd = cwd;
  return config;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The JSON value a `configurationSnippets` body string stands for once VS Code inserts the snippet: a string that
 * starts with `^` is inserted as raw snippet text (so `^"\\${file}"` becomes the JSON text `"${file}"`, after the
 * snippet escapes `\$`, `\}` and `\\` are undone), any other string is inserted as that string. Undefined when the
 * raw text is not JSON. Only snippets use this syntax: in `initialConfigurations` or a launch.json it is a literal.
 */
export function expandSnippetValue(value: string): unknown {
  if (!value.startsWith('^')) return value;
  const text = value.slice(1).replace(/\\([$}\\])/g, '$1');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Fields of a launch configuration that hold a path or a name, where snippet syntax breaks the launch. */
const PATH_FIELDS = ['program', 'module', 'cwd', 'python'] as const;

export interface SnippetRepair {
  config: TensorSightLaunchConfig;
  /** fields whose `^"…"` snippet text was read as the string it stands for */
  repaired: string[];
  /** fields with `^…` text that is not a snippet string (the launch cannot go ahead) */
  unusable: string[];
}

/**
 * Reads a launch.json entry written from a snippet by an editor that did not expand it (or by an older TensorSight
 * whose initial configuration carried snippet syntax): `"program": "^\"\\${file}\""` becomes `"${file}"`, so the
 * editor substitutes the variable afterwards, instead of debugpy failing to spawn a program named `^"…"`.
 */
export function repairSnippetSyntax(config: TensorSightLaunchConfig): SnippetRepair {
  const repaired: string[] = [];
  const unusable: string[] = [];
  const out: TensorSightLaunchConfig = { ...config };
  for (const field of PATH_FIELDS) {
    const value = config[field];
    if (typeof value !== 'string' || !value.startsWith('^"')) continue;
    const expanded = expandSnippetValue(value);
    if (typeof expanded === 'string') {
      out[field] = expanded;
      repaired.push(field);
    } else {
      unusable.push(field);
    }
  }
  return { config: out, repaired, unusable };
}
