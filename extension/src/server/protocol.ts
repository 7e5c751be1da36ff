/**
 * TensorSight's contract with pyhelpers/tensorsight: the custom LSP methods and their payloads, the run
 * event types the server forwards, the debuggee's environment and the launch options in TENSORSIGHT_OPTIONS.
 *
 * GENERATED from pyhelpers/tensorsight/core/protocol.py by scripts/generate_protocol_ts.py; do not edit by
 * hand (tests/core/test_protocol.py fails when this file is stale).
 */

export const Methods = {
  startSession: 'tensorsight/startSession',
  endSession: 'tensorsight/endSession',
  validateCondition: 'tensorsight/validateCondition',
  suggestConditions: 'tensorsight/suggestConditions',
  toolFindings: 'tensorsight/toolFindings',
  runEvent: 'tensorsight/runEvent',
  gpu: 'tensorsight/gpu',
  status: 'tensorsight/status',
} as const;

/** The environment the extension gives the debuggee (the agent reads it). */
export const AgentEnvironment = {
  hub: 'TENSORSIGHT_HUB',
  token: 'TENSORSIGHT_TOKEN',
  options: 'TENSORSIGHT_OPTIONS',
  session: 'TENSORSIGHT_SESSION',
  locale: 'TENSORSIGHT_LOCALE',
} as const;

/** The language server's own environment. */
export const ServerEnvironment = {
  bundledLibs: 'TENSORSIGHT_BUNDLED_LIBS',
  logLevel: 'TENSORSIGHT_LOG_LEVEL',
  locale: 'TENSORSIGHT_LOCALE',
} as const;

/** The `type` of every run event the server sends as `tensorsight/runEvent` (agents' and its own). */
export const RUN_EVENT_TYPES = [
  'bye',
  'condition-error',
  'dropped',
  'finding',
  'hello',
  'histogram',
  'log',
  'memory',
  'nonfinite',
  'phase-summary',
  'phases',
  'rank',
  'rank-state',
  'ranks',
  'run-finished',
  'scalars',
  'shape-map',
  'tensorboard',
  'timer',
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** Launch options (TENSORSIGHT_OPTIONS, camelCase); every key is optional. */
export interface LaunchOptions {
  /** stop in the user's frame at the first NaN/Inf a tensor op produces (the doctor records it instead) */
  breakOnNonFinite?: boolean;
  /** record shapes at assignment lines */
  observeShapes?: boolean;
  /** steps between observation windows */
  observeShapesEvery?: number;
  /** look for labels leaking into the features */
  checkLeakage?: boolean;
  /** seconds the leakage checks may spend per run */
  leakageBudgetSeconds?: number;
  /** master switch of the measurement */
  measure?: boolean;
  /** time data/forward/backward/optimizer/other */
  phases?: boolean;
  /** loss, lr, grad norms every N steps */
  scalarsEvery?: number;
  /** one gradient norm per parameter too */
  gradNormsPerParameter?: boolean;
  /** weight/grad histograms every N steps */
  histogramEvery?: number;
  /** process and CUDA memory per step */
  memory?: boolean;
  /** start tracemalloc at launch */
  traceMemory?: boolean;
  /** write a training log to this file */
  logFile?: string | null;
  /** the training log's level */
  logLevel?: string;
  /** write TensorBoard event files here */
  tensorboardDir?: string | null;
  /** dynamics findings from the curves */
  diagnoseCurves?: boolean;
  /** data loading above this share of a step is a performance finding */
  dataShareThreshold?: number;
  /** the ranks that may stop (breakpoints, sentinel); all if unset */
  ranks?: number | number[] | null;
  /** seconds between rank-state reports */
  rankHeartbeat?: number;
  /** seconds in a collective before a rank is waiting */
  rankWaitAfter?: number;
}

/** What the agent assumes for an option that is not given. */
export const LAUNCH_OPTION_DEFAULTS: Required<LaunchOptions> = {
  breakOnNonFinite: false,
  observeShapes: true,
  observeShapesEvery: 500,
  checkLeakage: true,
  leakageBudgetSeconds: 5.0,
  measure: true,
  phases: true,
  scalarsEvery: 1,
  gradNormsPerParameter: true,
  histogramEvery: 100,
  memory: true,
  traceMemory: false,
  logFile: null,
  logLevel: 'INFO',
  tensorboardDir: null,
  diagnoseCurves: true,
  dataShareThreshold: 0.5,
  ranks: null,
  rankHeartbeat: 5.0,
  rankWaitAfter: 2.0,
};

/** The debugpy launch fields a "Debug Training" configuration gets when it leaves them out. */
export const DEBUG_TRAINING_DEFAULTS = {
  justMyCode: true,
  console: 'internalConsole',
} as const;

/** The default of each `tensorsight.*` setting (package.json declares the same). */
export const SETTING_DEFAULTS = {
  python: '',
  breakOnNonFinite: true,
  justMyCode: true,
  injectIntoPythonDebugger: true,
  'server.enabled': true,
  'statusBar.gpu': true,
  'tensorboard.logDir': 'runs',
  'tensorboard.logRuns': false,
  'doctor.timeout': 600,
  'trace.server': 'off',
} as const;

/** A run's phase breakdown leaves its first step out once this many later steps are measured. */
export const PHASE_STEPS_WITHOUT_THE_FIRST = 3;

export interface StartSessionParams {
  sessionId: string;
}

/** The same answer when the session was already started. */
export interface StartSessionResult {
  /** '127.0.0.1:PORT': pass it to the debuggee as TENSORSIGHT_HUB */
  address: string;
  /** pass it to the debuggee as TENSORSIGHT_TOKEN */
  token: string;
}

export interface EndSessionParams {
  sessionId: string;
}

export interface EndSessionResult {
  ended: boolean;
}

export interface ValidateConditionParams {
  uri: string;
  /** 0-based */
  line: number;
  condition: string;
}

export interface ValidateConditionResult {
  /** names (and unknown tensorsight helpers) not defined at the line */
  undefinedNames: string[];
  /** one sentence for a warning; empty when the condition is fine */
  message: string;
  /** why the condition is not a Python expression */
  syntaxError: string | null;
  /** what in the condition may change the program when it runs (in-place methods, out=, :=, I/O, calls not known to be harmless); the message warns about them */
  sideEffects: string[];
  /** the server could check the condition */
  available: boolean;
}

export interface SuggestConditionsParams {
  name: string;
  uri?: string;
  /** 0-based; with uri, the shape a run observed there sharpens the offer */
  line?: number;
  kindHint?: string;
  shape?: number[];
}

/** A finding in the shared model (a tool's --json report carries these). */
export interface ReportedFinding {
  kind: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  file: string;
  /** 1-based */
  line: number;
  step?: number;
  rank?: number;
  details?: Record<string, unknown>;
}

/** A tool's report for Problems: the server merges it with the rules and the runs (one problem per bug). */
export interface ToolFindingsParams {
  /** 'doctor', 'profile', 'shapes' or 'overfit': its earlier report is replaced */
  tool: string;
  findings: ReportedFinding[];
}

export interface ToolFindingsResult {
  /** findings kept (malformed ones are dropped) */
  accepted: number;
}

export interface ConditionSuggestion {
  label: string;
  condition: string;
  description: string;
}

/** An agent event as the agent sent it (non-finite numbers arrive as 'NaN', 'Infinity', '-Infinity'). */
export interface RunEvent {
  /** one of RUN_EVENT_TYPES; a newer agent may send others (ignore them) */
  type: string;
  /** absent on the events the server makes itself */
  pid?: number;
  time?: number;
  rank?: number;
  step?: number;
  [key: string]: unknown;
}

/** One run event, as the rest of the extension receives them (the notification carries a batch). */
export interface RunEventParams {
  sessionId: string;
  event: RunEvent;
}

/** A session's run events in one notification: at most 4 a second per session, 500 events and 1 MiB each; an event over 64 KiB is not forwarded but counted (a server `dropped` event with `oversize`). */
export interface RunEventBatch {
  sessionId: string;
  events: RunEvent[];
}

export interface GpuInfo {
  index: number;
  name: string;
  /** percent */
  utilization: number | null;
  /** bytes */
  memoryUsed: number | null;
  /** bytes */
  memoryTotal: number | null;
  /** bytes used by the debugged processes */
  processMemoryUsed?: number;
}

export interface GpuParams {
  available: boolean;
  gpus: GpuInfo[];
  message?: string;
}

export interface RankVerdict {
  rank: number;
  /** running, stopped, waiting, hung, silent or finished */
  verdict: string;
  message: string;
  state: string;
  since: number;
  step: number | null;
  waiting_for?: number[];
  file?: string;
  line?: number;
  blocked_in?: string;
}

export interface StatusDetail {
  sessionId: string;
  address?: string;
  processes: number;
  connections?: number;
  events: number;
  dropped: number;
  rejectedConnections?: number;
  malformedEvents?: number;
  ranks: RankVerdict[];
}

export interface StatusParams {
  /** live sessions */
  sessions: number;
  state: 'idle' | 'waiting' | 'connected';
  details: StatusDetail[];
}

/** Each request's params and answer, by method. */
export interface Requests {
  'tensorsight/startSession': { params: StartSessionParams; result: StartSessionResult };
  'tensorsight/endSession': { params: EndSessionParams; result: EndSessionResult };
  'tensorsight/validateCondition': { params: ValidateConditionParams; result: ValidateConditionResult };
  'tensorsight/suggestConditions': { params: SuggestConditionsParams; result: ConditionSuggestion[] };
  'tensorsight/toolFindings': { params: ToolFindingsParams; result: ToolFindingsResult };
}

/** Each notification's params, by method. */
export interface Notifications {
  'tensorsight/runEvent': RunEventBatch;
  'tensorsight/gpu': GpuParams;
  'tensorsight/status': StatusParams;
}
