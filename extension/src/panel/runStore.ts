/**
 * The live record of each debugged training run, built from the hub's `tensorsight/runEvent` notifications: scalar
 * series (loss, lr, grad norms per layer, train and val), the phase breakdown, the latest weight/gradient histograms,
 * memory, NaN/Inf stops, and the user's `tensorsight.Timer` measurements. Pure (no editor API): the training panel renders its snapshots, the status bar reads the
 * step, and tests/extension/runStore.test.ts pins the reduction.
 */
import { PHASE_STEPS_WITHOUT_THE_FIRST, type RunEvent } from '../server/protocol';

export const MAX_POINTS = 2000;
export const PHASES = ['data', 'forward', 'backward', 'optimizer', 'other'] as const;
export type Phase = (typeof PHASES)[number];

export interface Series {
  steps: number[];
  values: number[];
}

export interface Histogram {
  name: string;
  kind: 'weight' | 'grad';
  step: number;
  edges: number[];
  counts: number[];
}

/** One `tensorsight.Timer` of the program (by name): its last measurement and the run's total, in seconds. */
export interface TimerTotals {
  name: string;
  last: number;
  total: number;
  calls: number;
  file?: string;
  line?: number;
}

export interface RunSnapshot {
  sessionId: string;
  /** Scalar series keyed "split/name", e.g. "train/loss", "train/grad_norm/fc1.weight", "val/loss". */
  scalars: Record<string, Series>;
  /**
   * The run's phase breakdown and the number of steps it covers: what the code lens shows too. The first step (worker
   * start-up, lazy initialisation) is left out once PHASE_STEPS_WITHOUT_THE_FIRST later steps are measured, as the
   * agent's `phase-summary` does, and that summary replaces the live tally when it arrives.
   */
  phaseTotals: Record<Phase, number>;
  phaseSteps: number;
  phaseTally: { first?: Record<Phase, number>; later: Record<Phase, number>; laterSteps: number; final: boolean };
  lastPhases?: { step: number; seconds: Record<Phase, number> };
  histograms: Record<string, Histogram>;
  memory: Series;
  nonfinite: Array<{ step: number; file: string; line: number; message: string }>;
  timers: Record<string, TimerTotals>;
  lastStep: number;
  events: number;
}

export function emptyRun(sessionId: string): RunSnapshot {
  return {
    sessionId,
    scalars: {},
    phaseTotals: noPhases(),
    phaseSteps: 0,
    phaseTally: { later: noPhases(), laterSteps: 0, final: false },
    histograms: {},
    memory: { steps: [], values: [] },
    nonfinite: [],
    timers: {},
    lastStep: -1,
    events: 0,
  };
}

/** Applies one event to the run (mutating it, for speed with many events) and returns it. */
export function applyEvent(run: RunSnapshot, event: RunEvent): RunSnapshot {
  run.events++;
  const step = finiteNumber(event.step);
  if (step !== undefined) run.lastStep = Math.max(run.lastStep, step);
  switch (event.type) {
    case 'scalars': {
      const values = event.values;
      if (step === undefined || !isRecord(values)) break;
      const split = typeof event.split === 'string' ? event.split : 'train';
      for (const [name, value] of Object.entries(values)) {
        // NaN/Inf are kept (as null gaps in the plot) so a blow-up is visible rather than silently dropped.
        if (typeof value !== 'number' && value !== null) continue;
        const key = `${split}/${name}`;
        const series = (run.scalars[key] ??= { steps: [], values: [] });
        push(series, step, typeof value === 'number' ? value : Number.NaN);
      }
      break;
    }
    case 'phases': {
      const tally = run.phaseTally;
      if (!isRecord(event.seconds) || tally.final) break;
      const clean = cleanPhases(event.seconds);
      if (tally.first === undefined && (step === 1 || (step === undefined && tally.laterSteps === 0))) {
        tally.first = clean;
      } else {
        for (const phase of PHASES) tally.later[phase] += clean[phase];
        tally.laterSteps++;
      }
      const withFirst = tally.first !== undefined && tally.laterSteps < PHASE_STEPS_WITHOUT_THE_FIRST;
      run.phaseTotals = noPhases();
      for (const phase of PHASES)
        run.phaseTotals[phase] = tally.later[phase] + (withFirst ? (tally.first?.[phase] ?? 0) : 0);
      run.phaseSteps = tally.laterSteps + (withFirst ? 1 : 0);
      run.lastPhases = { step: step ?? run.phaseSteps, seconds: clean };
      break;
    }
    case 'phase-summary': {
      const steps = finiteNumber(event.steps);
      if (!isRecord(event.seconds) || steps === undefined || steps < 1) break;
      run.phaseTally.final = true;
      run.phaseTotals = cleanPhases(event.seconds);
      run.phaseSteps = Math.round(steps);
      break;
    }
    case 'histogram': {
      const { name, kind, edges, counts } = event;
      if (typeof name !== 'string' || !isNumberArray(edges) || !isNumberArray(counts)) break;
      if (edges.length !== counts.length + 1) break;
      const histogramKind = kind === 'grad' ? 'grad' : 'weight';
      run.histograms[`${histogramKind}:${name}`] = { name, kind: histogramKind, step: step ?? -1, edges, counts };
      break;
    }
    case 'memory': {
      const bytes = finiteNumber(event.cuda_allocated) ?? finiteNumber(event.cpu_rss_bytes);
      if (step !== undefined && bytes !== undefined) push(run.memory, step, bytes);
      break;
    }
    case 'nonfinite': {
      run.nonfinite.push({
        step: step ?? -1,
        file: typeof event.file === 'string' ? event.file : '',
        line: finiteNumber(event.line) ?? 0,
        message: typeof event.message === 'string' ? event.message : 'NaN/Inf',
      });
      break;
    }
    case 'timer': {
      const seconds = finiteNumber(event.seconds);
      if (typeof event.name !== 'string' || seconds === undefined || seconds < 0) break;
      const timer = (run.timers[event.name] ??= { name: event.name, last: 0, total: 0, calls: 0 });
      timer.last = seconds;
      timer.total += seconds;
      timer.calls++;
      if (typeof event.file === 'string') timer.file = event.file;
      const line = finiteNumber(event.line);
      if (line !== undefined) timer.line = line;
      break;
    }
    default:
      break;
  }
  return run;
}

function noPhases(): Record<Phase, number> {
  return { data: 0, forward: 0, backward: 0, optimizer: 0, other: 0 };
}

/** Seconds per phase from an event, a missing, negative or non-finite figure read as 0. */
function cleanPhases(seconds: Record<string, unknown>): Record<Phase, number> {
  const clean = noPhases();
  for (const phase of PHASES) {
    const value = finiteNumber(seconds[phase]);
    if (value !== undefined && value >= 0) clean[phase] = value;
  }
  return clean;
}

/** Share of each phase in the recorded time (0..1), or undefined before the first phases event. */
export function phaseShares(run: RunSnapshot): Record<Phase, number> | undefined {
  const total = PHASES.reduce((sum, phase) => sum + run.phaseTotals[phase], 0);
  if (run.phaseSteps === 0 || total <= 0) return undefined;
  const shares = {} as Record<Phase, number>;
  for (const phase of PHASES) shares[phase] = run.phaseTotals[phase] / total;
  return shares;
}

/** Keeps a series bounded: past MAX_POINTS, every other old point is dropped (the shape of the curve survives). */
function push(series: Series, step: number, value: number): void {
  const last = series.steps.length - 1;
  if (last >= 0 && series.steps[last] === step) {
    series.values[last] = value; // the same step reported again (e.g. a re-logged value): keep the latest
    return;
  }
  series.steps.push(step);
  series.values.push(value);
  if (series.steps.length > MAX_POINTS) {
    series.steps = series.steps.filter((_, index) => index % 2 === 0 || index === series.steps.length - 1);
    series.values = series.values.filter((_, index) => index % 2 === 0 || index === series.values.length - 1);
  }
}

function finiteNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNumberArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'number');
}
