/**
 * Turns a "Debug Training" configuration (debug type `tensorsight`) into the request debugpy's adapter understands.
 *
 * A launch gets the environment that injects the TensorSight agent into the debuggee:
 *   - PYTHONPATH gains `pyhelpers`, so debugpy loads our pydevd plugin before user code runs;
 *   - TENSORSIGHT_OPTIONS carries the TensorSight launch options as JSON (with the link the first-NaN stop shows);
 *   - TENSORSIGHT_HUB / TENSORSIGHT_TOKEN connect the agent to the language server's hub (when it runs).
 * The request also names our launcher folder (`debugLauncherPath`, pyhelpers/tensorsight/debugpy_start/launcher):
 * debugpy's launcher without the environment report it would build for a log nobody keeps.
 *
 * An attach reaches a process that already runs (waiting in `python -m tensorsight watch`, or started with
 * `python -m debugpy --listen`), so no environment can be given to it: the same variables travel in the attach
 * request under ATTACH_AGENT_KEY, and the agent in that process (pyhelpers/tensorsight/agent/debugger/attach.py)
 * reads them when pydevd receives the request.
 *
 * Pure functions, used by the debug configuration providers and pinned by tests/extension/launchConfig.test.ts.
 * The variable names come from the generated contract (../server/protocol.ts).
 */
import * as path from 'node:path';
import { AgentEnvironment, ATTACH_AGENT_KEY, DEBUG_TRAINING_DEFAULTS } from '../server/protocol';
import { isLoopbackHost, LOOPBACK } from './torchrun';

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

/** What the agent of one debug session is told, by a launch's environment or an attach request alike. */
export interface AgentSession {
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

/** A launch's context: the agent's session plus what its PYTHONPATH is built from. */
export interface AgentContext extends AgentSession {
  pyhelpers: string;
  /** PATH-like separator of the platform (':' or ';'). */
  separator: string;
  /** The extension host's environment (its PYTHONPATH is kept after ours). */
  baseEnv: Readonly<Record<string, string | undefined>>;
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

/**
 * The agent's variables (AgentEnvironment names) for one session: the options as JSON (with the View Tensor link
 * unless the options name one), the session id, the editor's language when known, the hub's address and token
 * when the language server runs one.
 */
export function agentVariables(options: Record<string, unknown>, session: AgentSession): Record<string, string> {
  const withLink =
    session.viewLink && !('viewTensorLink' in options) ? { ...options, viewTensorLink: session.viewLink } : options;
  const variables: Record<string, string> = {
    [AgentEnvironment.options]: JSON.stringify(withLink),
    [AgentEnvironment.session]: session.sessionId,
  };
  if (session.locale) variables[AgentEnvironment.locale] = session.locale;
  if (session.hub) {
    variables[AgentEnvironment.hub] = session.hub.address;
    variables[AgentEnvironment.token] = session.hub.token;
  }
  return variables;
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
  const ownLocale = AgentEnvironment.locale in env; // the configuration's TENSORSIGHT_LOCALE wins over the editor's
  for (const [name, value] of Object.entries(agentVariables(options, context))) {
    if (name !== AgentEnvironment.locale || !ownLocale) env[name] = value;
  }
  return env;
}

/**
 * A problem that makes the configuration unusable, as a message key (`request`, `program`, or an AttachProblem);
 * undefined when it is fine.
 */
export function launchProblem(config: TensorSightLaunchConfig): string | undefined {
  if (config.request === 'attach') return attachProblem(config);
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

/** How an attach reaches the process: debugpy connects to it (`connect`), or waits for it to connect (`listen`). */
export interface AttachEndpoint {
  mode: 'connect' | 'listen';
  host: string;
  port: number;
}

/**
 * What is wrong with an attach entry, as a message key: `endpoint` (none of `connect`, `listen`, `host`/`port`),
 * `both` (`connect` and `listen` at once), `host` (not a name), `port` (not a whole number 1..65535),
 * `pathMappings` (not a list of `{ "localRoot", "remoteRoot" }`).
 */
export type AttachProblem = 'endpoint' | 'both' | 'host' | 'port' | 'pathMappings';

/** The attach entry's problem, or undefined when `toDebugpyAttach` can turn it into a request. */
export function attachProblem(config: TensorSightLaunchConfig): AttachProblem | undefined {
  const given = givenEndpoint(config);
  if (typeof given === 'string') return given;
  if (given.host !== undefined && (typeof given.host !== 'string' || given.host.trim() === '')) return 'host';
  if (portNumber(given.port) === undefined) return 'port';
  if (config.pathMappings !== undefined && !isPathMappings(config.pathMappings)) return 'pathMappings';
  return undefined;
}

/** Where the attach goes (legacy top-level `host`/`port` is a `connect`); undefined while attachProblem says why. */
export function attachEndpoint(config: TensorSightLaunchConfig): AttachEndpoint | undefined {
  const given = givenEndpoint(config);
  const port = typeof given === 'string' ? undefined : portNumber(given.port);
  if (typeof given === 'string' || port === undefined) return undefined;
  const host = typeof given.host === 'string' && given.host.trim() ? given.host.trim() : LOOPBACK;
  return { mode: given.mode, host, port };
}

/** The `{host, port}` the entry names, unchecked, or why it names none. */
function givenEndpoint(
  config: TensorSightLaunchConfig,
): { mode: AttachEndpoint['mode']; host: unknown; port: unknown } | 'endpoint' | 'both' {
  const { connect, listen } = config;
  if (connect !== undefined && listen !== undefined) return 'both';
  const given = connect ?? listen;
  if (given === undefined) {
    if (config.host === undefined && config.port === undefined) return 'endpoint';
    return { mode: 'connect', host: config.host, port: config.port };
  }
  if (!isPlainObject(given)) return 'endpoint';
  return { mode: listen !== undefined ? 'listen' : 'connect', host: given.host, port: given.port };
}

/**
 * The attach request for debugpy's adapter: `connect` or `listen` as `{host, port}`, `pathMappings` as given,
 * `justMyCode` from the configuration or the setting (as for a launch), and the agent's variables under
 * ATTACH_AGENT_KEY (an object of strings; `options` and `breakOnNonFinite` merged as `launchOptions` does). The hub
 * listens on this machine's loopback only, so a process behind another host cannot reach it: that process gets no
 * hub address and no token. Fields of a launch (`python`, `program`, `env`, ...) are dropped.
 * Call it only when attachProblem(config) is undefined.
 */
export function toDebugpyAttach(
  config: TensorSightLaunchConfig,
  defaults: LaunchDefaults,
  session: AgentSession,
): TensorSightLaunchConfig {
  const endpoint = attachEndpoint(config);
  if (!endpoint) throw new Error(`not an attach entry: ${attachProblem(config) ?? 'request'}`);
  const options = launchOptions(config, defaults.breakOnNonFinite);
  const reachable = isLoopbackHost(endpoint.host) ? session : { ...session, hub: undefined };
  const kept = Object.entries(config).filter(([key]) => !NOT_PASSED_ON.has(key));
  return {
    ...Object.fromEntries(kept),
    type: config.type,
    request: 'attach',
    name: config.name,
    [endpoint.mode]: { host: endpoint.host, port: endpoint.port },
    justMyCode: typeof config.justMyCode === 'boolean' ? config.justMyCode : defaults.justMyCode,
    breakOnNonFinite: options.breakOnNonFinite === true,
    [ATTACH_AGENT_KEY]: agentVariables(options, reachable),
    [SESSION_ID_KEY]: session.sessionId,
  };
}

/**
 * Fields of an attach entry not passed on as written: the endpoint forms (replaced by the one `connect` or `listen`)
 * and what means something to a launch only (`options` travels under ATTACH_AGENT_KEY).
 */
const NOT_PASSED_ON = new Set([
  'connect',
  'listen',
  'host',
  'port',
  'options',
  'python',
  'program',
  'module',
  'args',
  'env',
  'console',
  'debugLauncherPath',
]);

/** A port as a number: a whole number 1..65535, or such a number written as a string (e.g. from an input). */
function portNumber(port: unknown): number | undefined {
  const value = typeof port === 'string' && /^\d+$/.test(port.trim()) ? Number(port) : port;
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535 ? value : undefined;
}

function isPathMappings(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.every(
      (entry) => isPlainObject(entry) && typeof entry.localRoot === 'string' && typeof entry.remoteRoot === 'string',
    )
  );
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
