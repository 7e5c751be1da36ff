/**
 * TensorSight's contract with pyhelpers/tensorsight: the custom LSP methods and their payloads, the run
 * event types the server forwards, the debuggee's environment and the launch options in TENSORSIGHT_OPTIONS.
 *
 * GENERATED from pyhelpers/tensorsight/core/protocol/ by scripts/generate_protocol_ts.py; do not edit by
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

/** The attach request's key that carries AgentEnvironment to a running agent (through pydevd). */
export const ATTACH_AGENT_KEY = 'tensorsightAgent';

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
  /** the editor's link to its tensor viewer (scheme://extension/viewTensor?session=…) for the first-NaN stop */
  viewTensorLink?: string | null;
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
  viewTensorLink: null,
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
  /** a malformed one is dropped (not counted as accepted) */
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

/** A number as JSON carries it: NaN and the infinities arrive as these strings. */
export type WireNumber = number | 'NaN' | 'Infinity' | '-Infinity';

export interface NonfiniteCounts {
  nan?: number | null;
  posinf?: number | null;
  neginf?: number | null;
}

/** the process exits */
export interface ByeEvent {
  type: 'bye';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  dropped?: number | null;
}

/** a tensorsight.* condition helper was misused (it answered False) */
export interface ConditionErrorEvent {
  type: 'condition-error';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  expression: string;
  message: string;
  location: string;
}

/** events dropped on a full queue */
export interface DroppedEvent {
  type: 'dropped';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  count: number;
  origin?: string | null;
  oversize?: number | null;
  maxEventBytes?: number | null;
}

/** a Finding's wire dict: a runtime diagnostic */
export interface FindingEvent {
  type: 'finding';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  finding: Record<string, unknown>;
  origin?: string | null;
}

/** a process joined the session (the hub strips the token before anything else sees it) */
export interface HelloEvent {
  type: 'hello';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  protocol?: number | null;
  script?: string | null;
  argv?: string[] | null;
  origin?: string | null;
}

/** a weight or gradient histogram of the finite values, and the NaN/+Inf/-Inf counts of the sample (``nonfinite``: {nan, posinf, neginf}; no buckets when no value is finite) */
export interface HistogramEvent {
  type: 'histogram';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  step: number;
  name: string;
  kind: string;
  edges: WireNumber[];
  counts: number[];
  nonfinite?: NonfiniteCounts | null;
}

/** a training log line */
export interface LogEvent {
  type: 'log';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  level: string;
  message: string;
}

/** memory figures of a step (bytes) */
export interface MemoryEvent {
  type: 'memory';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  step: number;
  cpu_rss_bytes?: number | null;
  cuda_allocated?: number | null;
  cuda_reserved?: number | null;
  cuda_peak?: number | null;
  nvml_used?: number | null;
  nvml_total?: number | null;
}

/** the first NaN/Inf of the run: a diagnostic and a hover at its line */
export interface NonfiniteEvent {
  type: 'nonfinite';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  file?: string | null;
  line?: number | null;
  op?: string | null;
  phase?: string | null;
  step?: number | null;
  nan?: number | null;
  posinf?: number | null;
  neginf?: number | null;
  message?: string | null;
  title?: string | null;
  module?: string | null;
  node?: string | null;
}

/** seconds per phase over the whole run */
export interface PhaseSummaryEvent {
  type: 'phase-summary';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  steps: number;
  seconds: Record<string, WireNumber>;
  file?: string | null;
  line?: number | null;
}

/** seconds per phase of one step: the code lens above the training loop */
export interface PhasesEvent {
  type: 'phases';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  step?: number | null;
  seconds: Record<string, WireNumber>;
  eval_seconds?: WireNumber | null;
  file?: string | null;
  line?: number | null;
}

/** the process learnt its rank after the hello */
export interface RankEvent {
  type: 'rank';
  pid?: number | null;
  time?: WireNumber | null;
  rank: number;
  local_rank?: number | null;
  world_size: number;
  host?: string | null;
  source?: string | null;
  origin?: string | null;
}

/** a rank's heartbeat (running, stopped, waiting in a collective) */
export interface RankStateEvent {
  type: 'rank-state';
  pid?: number | null;
  time?: WireNumber | null;
  rank: number;
  local_rank?: number | null;
  world_size: number;
  state: string;
  since: WireNumber;
  heartbeat: WireNumber;
  step?: number | null;
  file?: string | null;
  line?: number | null;
  blocked_in?: string | null;
}

/** the ranks' verdicts, when they change */
export interface RanksEvent {
  type: 'ranks';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  verdicts: Record<string, unknown>[];
}

/** the doctored script ended (error text, or empty) */
export interface RunFinishedEvent {
  type: 'run-finished';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  error?: string | null;
}

/** loss, lr, gradient norms (train) or the validation loss (val) of a step */
export interface ScalarsEvent {
  type: 'scalars';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  step: number;
  split?: string | null;
  values: Record<string, unknown>;
  batches?: number | null;
}

/** the model's shapes per module at its first forward (the doctor's shapeMap) */
export interface ShapeMapEvent {
  type: 'shape-map';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  model: string;
  rows: Record<string, unknown>[];
  file?: string | null;
  line?: number | null;
}

/** TensorBoard event files are being written */
export interface TensorboardEvent {
  type: 'tensorboard';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  logdir: string;
  command: string;
}

/** one measurement of a tensorsight.Timer: the panel's timers and a hover at the timed line */
export interface TimerEvent {
  type: 'timer';
  pid?: number | null;
  time?: WireNumber | null;
  rank?: number | null;
  name: string;
  seconds: WireNumber;
  file?: string | null;
  line?: number | null;
}

/** A run event the contract declares, as parseRunEvent returns it. */
export type KnownRunEvent =
  | ByeEvent
  | ConditionErrorEvent
  | DroppedEvent
  | FindingEvent
  | HelloEvent
  | HistogramEvent
  | LogEvent
  | MemoryEvent
  | NonfiniteEvent
  | PhaseSummaryEvent
  | PhasesEvent
  | RankEvent
  | RankStateEvent
  | RanksEvent
  | RunFinishedEvent
  | ScalarsEvent
  | ShapeMapEvent
  | TensorboardEvent
  | TimerEvent;

/** A field's type in the schema table: a JSON type, a list, a string-keyed object, a payload, a union. */
export type WireType =
  | 'str'
  | 'int'
  | 'float'
  | 'bool'
  | 'null'
  | 'any'
  | readonly ['list', WireType]
  | readonly ['dict', WireType]
  | readonly ['object', string]
  | readonly ['literal', ...string[]]
  | readonly ['union', ...WireType[]];
/** `required`: a missing key is an error (a field that may be null or is optional may be missing). */
export type WireFields = Readonly<Record<string, { type: WireType; required: boolean }>>;

/** The fields of each run event and payload (nested ones too), by event type or payload name. */
export const WIRE_FIELDS: Readonly<Record<string, WireFields>> = {
  bye: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    dropped: { type: ['union', 'int', 'null'], required: false },
  },
  'condition-error': {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    expression: { type: 'str', required: true },
    message: { type: 'str', required: true },
    location: { type: 'str', required: true },
  },
  dropped: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    count: { type: 'int', required: true },
    origin: { type: ['union', 'str', 'null'], required: false },
    oversize: { type: ['union', 'int', 'null'], required: false },
    maxEventBytes: { type: ['union', 'int', 'null'], required: false },
  },
  finding: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    finding: { type: ['dict', 'any'], required: true },
    origin: { type: ['union', 'str', 'null'], required: false },
  },
  hello: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    protocol: { type: ['union', 'int', 'null'], required: false },
    script: { type: ['union', 'str', 'null'], required: false },
    argv: { type: ['union', ['list', 'str'], 'null'], required: false },
    origin: { type: ['union', 'str', 'null'], required: false },
  },
  histogram: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    step: { type: 'int', required: true },
    name: { type: 'str', required: true },
    kind: { type: 'str', required: true },
    edges: { type: ['list', 'float'], required: true },
    counts: { type: ['list', 'int'], required: true },
    nonfinite: { type: ['union', ['object', 'NonfiniteCounts'], 'null'], required: false },
  },
  log: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    level: { type: 'str', required: true },
    message: { type: 'str', required: true },
  },
  memory: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    step: { type: 'int', required: true },
    cpu_rss_bytes: { type: ['union', 'int', 'null'], required: false },
    cuda_allocated: { type: ['union', 'int', 'null'], required: false },
    cuda_reserved: { type: ['union', 'int', 'null'], required: false },
    cuda_peak: { type: ['union', 'int', 'null'], required: false },
    nvml_used: { type: ['union', 'int', 'null'], required: false },
    nvml_total: { type: ['union', 'int', 'null'], required: false },
  },
  nonfinite: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
    op: { type: ['union', 'str', 'null'], required: false },
    phase: { type: ['union', 'str', 'null'], required: false },
    step: { type: ['union', 'int', 'null'], required: false },
    nan: { type: ['union', 'int', 'null'], required: false },
    posinf: { type: ['union', 'int', 'null'], required: false },
    neginf: { type: ['union', 'int', 'null'], required: false },
    message: { type: ['union', 'str', 'null'], required: false },
    title: { type: ['union', 'str', 'null'], required: false },
    module: { type: ['union', 'str', 'null'], required: false },
    node: { type: ['union', 'str', 'null'], required: false },
  },
  'phase-summary': {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    steps: { type: 'int', required: true },
    seconds: { type: ['dict', 'float'], required: true },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
  },
  phases: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    step: { type: ['union', 'int', 'null'], required: false },
    seconds: { type: ['dict', 'float'], required: true },
    eval_seconds: { type: ['union', 'float', 'null'], required: false },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
  },
  rank: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: 'int', required: true },
    local_rank: { type: ['union', 'int', 'null'], required: false },
    world_size: { type: 'int', required: true },
    host: { type: ['union', 'str', 'null'], required: false },
    source: { type: ['union', 'str', 'null'], required: false },
    origin: { type: ['union', 'str', 'null'], required: false },
  },
  'rank-state': {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: 'int', required: true },
    local_rank: { type: ['union', 'int', 'null'], required: false },
    world_size: { type: 'int', required: true },
    state: { type: 'str', required: true },
    since: { type: 'float', required: true },
    heartbeat: { type: 'float', required: true },
    step: { type: ['union', 'int', 'null'], required: false },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
    blocked_in: { type: ['union', 'str', 'null'], required: false },
  },
  ranks: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    verdicts: { type: ['list', ['dict', 'any']], required: true },
  },
  'run-finished': {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    error: { type: ['union', 'str', 'null'], required: false },
  },
  scalars: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    step: { type: 'int', required: true },
    split: { type: ['union', 'str', 'null'], required: false },
    values: { type: ['dict', 'any'], required: true },
    batches: { type: ['union', 'int', 'null'], required: false },
  },
  'shape-map': {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    model: { type: 'str', required: true },
    rows: { type: ['list', ['dict', 'any']], required: true },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
  },
  tensorboard: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    logdir: { type: 'str', required: true },
    command: { type: 'str', required: true },
  },
  timer: {
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    name: { type: 'str', required: true },
    seconds: { type: 'float', required: true },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
  },
  ConditionSuggestion: {
    label: { type: 'str', required: true },
    condition: { type: 'str', required: true },
    description: { type: 'str', required: true },
  },
  EndSessionParams: {
    sessionId: { type: 'str', required: true },
  },
  EndSessionResult: {
    ended: { type: 'bool', required: true },
  },
  GpuInfo: {
    index: { type: 'int', required: true },
    name: { type: 'str', required: true },
    utilization: { type: ['union', 'float', 'null'], required: false },
    memoryUsed: { type: ['union', 'int', 'null'], required: false },
    memoryTotal: { type: ['union', 'int', 'null'], required: false },
    processMemoryUsed: { type: ['union', 'int', 'null'], required: false },
  },
  GpuParams: {
    available: { type: 'bool', required: true },
    gpus: { type: ['list', ['object', 'GpuInfo']], required: true },
    message: { type: ['union', 'str', 'null'], required: false },
  },
  NonfiniteCounts: {
    nan: { type: ['union', 'int', 'null'], required: false },
    posinf: { type: ['union', 'int', 'null'], required: false },
    neginf: { type: ['union', 'int', 'null'], required: false },
  },
  RankVerdict: {
    rank: { type: 'int', required: true },
    verdict: { type: 'str', required: true },
    message: { type: 'str', required: true },
    state: { type: 'str', required: true },
    since: { type: 'float', required: true },
    step: { type: ['union', 'int', 'null'], required: false },
    waiting_for: { type: ['union', ['list', 'int'], 'null'], required: false },
    file: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
    blocked_in: { type: ['union', 'str', 'null'], required: false },
  },
  ReportedFinding: {
    kind: { type: 'str', required: true },
    severity: { type: ['literal', 'error', 'warning', 'info'], required: true },
    message: { type: 'str', required: true },
    file: { type: 'str', required: true },
    line: { type: 'int', required: true },
    step: { type: ['union', 'int', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    details: { type: ['union', ['dict', 'any'], 'null'], required: false },
  },
  RunEvent: {
    type: { type: 'str', required: true },
    pid: { type: ['union', 'int', 'null'], required: false },
    time: { type: ['union', 'float', 'null'], required: false },
    rank: { type: ['union', 'int', 'null'], required: false },
    step: { type: ['union', 'int', 'null'], required: false },
  },
  RunEventBatch: {
    sessionId: { type: 'str', required: true },
    events: { type: ['list', ['object', 'RunEvent']], required: true },
  },
  RunEventParams: {
    sessionId: { type: 'str', required: true },
    event: { type: ['object', 'RunEvent'], required: true },
  },
  StartSessionParams: {
    sessionId: { type: 'str', required: true },
  },
  StartSessionResult: {
    address: { type: 'str', required: true },
    token: { type: 'str', required: true },
  },
  StatusDetail: {
    sessionId: { type: 'str', required: true },
    address: { type: ['union', 'str', 'null'], required: false },
    processes: { type: 'int', required: true },
    connections: { type: ['union', 'int', 'null'], required: false },
    events: { type: 'int', required: true },
    dropped: { type: 'int', required: true },
    rejectedConnections: { type: ['union', 'int', 'null'], required: false },
    malformedEvents: { type: ['union', 'int', 'null'], required: false },
    ranks: { type: ['list', ['object', 'RankVerdict']], required: true },
  },
  StatusParams: {
    sessions: { type: 'int', required: true },
    state: { type: ['literal', 'idle', 'waiting', 'connected'], required: true },
    details: { type: ['list', ['object', 'StatusDetail']], required: true },
  },
  SuggestConditionsParams: {
    name: { type: 'str', required: true },
    uri: { type: ['union', 'str', 'null'], required: false },
    line: { type: ['union', 'int', 'null'], required: false },
    kindHint: { type: ['union', 'str', 'null'], required: false },
    shape: { type: ['union', ['list', 'int'], 'null'], required: false },
  },
  ToolFindingsParams: {
    tool: { type: 'str', required: true },
    findings: { type: ['list', ['object', 'ReportedFinding']], required: true },
  },
  ToolFindingsResult: {
    accepted: { type: 'int', required: true },
  },
  ValidateConditionParams: {
    uri: { type: 'str', required: true },
    line: { type: 'int', required: true },
    condition: { type: 'str', required: true },
  },
  ValidateConditionResult: {
    undefinedNames: { type: ['list', 'str'], required: true },
    message: { type: 'str', required: true },
    syntaxError: { type: ['union', 'str', 'null'], required: false },
    sideEffects: { type: ['list', 'str'], required: true },
    available: { type: 'bool', required: true },
  },
};

/** What parseRunEvent makes of a received value: the typed event, or why it is not one. */
export type ParsedRunEvent = { ok: true; event: KnownRunEvent } | { ok: false; type?: string; error: string };

/**
 * Checks a received run event against the contract (keys the contract does not declare are ignored; a missing
 * required key, a value of the wrong type or an unknown `type` is an error), as the server's parse_event does.
 */
export function parseRunEvent(value: unknown): ParsedRunEvent {
  if (!isWireObject(value)) return { ok: false, error: 'a run event must be an object' };
  const type = value.type;
  if (typeof type !== 'string' || !type) return { ok: false, error: 'event without a type' };
  const fields = Object.hasOwn(WIRE_FIELDS, type) ? WIRE_FIELDS[type] : undefined;
  if (fields === undefined) return { ok: false, type, error: `unknown event type '${type}'` };
  const error = wireFieldsError(value, fields, '');
  return error === undefined ? { ok: true, event: value as unknown as KnownRunEvent } : { ok: false, type, error };
}

function wireFieldsError(value: Record<string, unknown>, fields: WireFields, where: string): string | undefined {
  for (const [key, field] of Object.entries(fields)) {
    const item = value[key];
    if (item === undefined || (item === null && !field.required)) {
      if (field.required) return `'${where}${key}' is missing`;
      continue;
    }
    const error = wireTypeError(item, field.type, `${where}${key}`);
    if (error !== undefined) return error;
  }
  return undefined;
}

function wireTypeError(value: unknown, type: WireType, name: string): string | undefined {
  if (typeof type === 'string') {
    const fits =
      type === 'any' ||
      (type === 'null' && value === null) ||
      (type === 'str' && typeof value === 'string') ||
      (type === 'bool' && typeof value === 'boolean') ||
      (type === 'int' && typeof value === 'number' && Number.isInteger(value)) ||
      (type === 'float' &&
        (typeof value === 'number' || value === 'NaN' || value === 'Infinity' || value === '-Infinity'));
    return fits ? undefined : `'${name}' must be ${type}`;
  }
  const [kind, ...rest] = type;
  if (kind === 'literal') {
    return (rest as unknown[]).includes(value) ? undefined : `'${name}' must be one of ${rest.join(', ')}`;
  }
  if (kind === 'union') {
    const options = rest as WireType[];
    if (options.some((option) => wireTypeError(value, option, name) === undefined)) return undefined;
    // `list | null` given a list: say which item is wrong (as parse_payload does)
    const others = options.filter((option) => option !== 'null');
    const only = others.length === 1 ? others[0] : undefined;
    if (only !== undefined && typeof only !== 'string' && value !== null) return wireTypeError(value, only, name);
    const words = options.map((option) => (typeof option === 'string' ? option : option[0]));
    return `'${name}' must be ${words.join(' or ')}`;
  }
  if (kind === 'list') {
    if (!Array.isArray(value)) return `'${name}' must be a list`;
    for (const [index, item] of value.entries()) {
      const error = wireTypeError(item, rest[0] as WireType, `${name}[${index}]`);
      if (error !== undefined) return error;
    }
    return undefined;
  }
  if (!isWireObject(value)) return `'${name}' must be an object`;
  if (kind === 'object') return wireFieldsError(value, WIRE_FIELDS[rest[0] as string] ?? {}, `${name}.`);
  for (const [key, item] of Object.entries(value)) {
    const error = wireTypeError(item, rest[0] as WireType, `${name}.${key}`);
    if (error !== undefined) return error;
  }
  return undefined;
}

function isWireObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Each request's and notification's payload interface by name, as parsePayload returns it. */
export interface Payloads {
  StartSessionParams: StartSessionParams;
  StartSessionResult: StartSessionResult;
  EndSessionParams: EndSessionParams;
  EndSessionResult: EndSessionResult;
  ValidateConditionParams: ValidateConditionParams;
  ValidateConditionResult: ValidateConditionResult;
  SuggestConditionsParams: SuggestConditionsParams;
  ReportedFinding: ReportedFinding;
  ToolFindingsParams: ToolFindingsParams;
  ToolFindingsResult: ToolFindingsResult;
  ConditionSuggestion: ConditionSuggestion;
  RunEvent: RunEvent;
  RunEventParams: RunEventParams;
  RunEventBatch: RunEventBatch;
  GpuInfo: GpuInfo;
  GpuParams: GpuParams;
  RankVerdict: RankVerdict;
  StatusDetail: StatusDetail;
  StatusParams: StatusParams;
}

/** What parsePayload makes of a received value: the typed payload, or why it is not one. */
export type ParsedPayload<K extends keyof Payloads> = { ok: true; value: Payloads[K] } | { ok: false; error: string };

/**
 * Checks a received payload (a request's answer, a finding of a tool's report) against the contract's interface
 * `name`, with the rules of parseRunEvent (and of the server's parse_payload): keys it does not declare are ignored.
 */
export function parsePayload<K extends keyof Payloads>(name: K, value: unknown): ParsedPayload<K> {
  if (!isWireObject(value)) return { ok: false, error: `${name} must be an object` };
  const error = wireFieldsError(value, WIRE_FIELDS[name] ?? {}, '');
  return error === undefined ? { ok: true, value: value as unknown as Payloads[K] } : { ok: false, error };
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
