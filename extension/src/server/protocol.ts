/**
 * TensorSight's custom LSP methods and their payloads (the contract with pyhelpers/tensorsight/server).
 */

export const Methods = {
  startSession: 'tensorsight/startSession',
  endSession: 'tensorsight/endSession',
  validateCondition: 'tensorsight/validateCondition',
  suggestConditions: 'tensorsight/suggestConditions',
  runEvent: 'tensorsight/runEvent',
  gpu: 'tensorsight/gpu',
  status: 'tensorsight/status',
} as const;

export interface StartSessionResult {
  address: string;
  token: string;
}

export interface ValidateConditionParams {
  uri: string;
  /** 0-based */
  line: number;
  condition: string;
}

export interface ValidateConditionResult {
  undefinedNames: string[];
  message: string;
}

export interface ConditionSuggestion {
  label: string;
  condition: string;
  description: string;
}

export interface RunEvent {
  type: string;
  step?: number;
  [key: string]: unknown;
}

/** One run event, as the rest of the extension receives them. */
export interface RunEventParams {
  sessionId: string;
  event: RunEvent;
}

/** What the server sends: a session's events in a batch (a few batches a second at most). */
export interface RunEventBatch {
  sessionId: string;
  events: RunEvent[];
}

/** The events of one `tensorsight/runEvent` notification, one by one; anything malformed is left out. */
export function runEventsOf(batch: unknown): RunEventParams[] {
  if (typeof batch !== 'object' || batch === null) return [];
  const { sessionId, events } = batch as Partial<RunEventBatch>;
  if (typeof sessionId !== 'string' || !Array.isArray(events)) return [];
  return events
    .filter((event): event is RunEvent => typeof event === 'object' && event !== null && typeof event.type === 'string')
    .map((event) => ({ sessionId, event }));
}

export interface GpuInfo {
  index: number;
  name: string;
  utilization: number;
  memoryUsed: number;
  memoryTotal: number;
  processMemoryUsed?: number;
}

export interface GpuParams {
  available: boolean;
  gpus: GpuInfo[];
  message?: string;
}

export interface StatusParams {
  sessions: number;
  state: string;
}
