/**
 * The live record of each debugged training run, built from the hub's `tensorsight/runEvent` notifications: scalar
 * series (loss, lr, grad norms per layer, train and val), the phase breakdown, the latest weight/gradient histograms,
 * memory, NaN/Inf stops, and the user's `tensorsight.Timer` measurements. Pure (no editor API): the training panel renders its snapshots, the status bar reads the
 * step, and tests/extension/runStore.test.ts pins the reduction.
 *
 * Non-finite scalars arrive as the strings 'NaN', 'Infinity', '-Infinity' (JSON cannot carry the numbers): they stay in
 * their series as NaN (a gap in the plot) and each run of them becomes a marker span (`nonfiniteScalars`), so the step
 * a loss or gradient norm went NaN is visible. The banner is the run's current state: the newest NaN/Inf stop, gone
 * once the loss is finite again after it, and replaced by the run's end (with the step the loss went NaN, when it
 * ended NaN).
 */
import {
  parseRunEvent,
  PHASE_STEPS_WITHOUT_THE_FIRST,
  type NonfiniteCounts,
  type RunEvent,
  type WireNumber,
} from '../server/protocol';

export const MAX_POINTS = 2000;
/** Marker spans kept per series (the first ones and the newest: a loss that flips in and out of NaN forever). */
export const MAX_NONFINITE_SPANS = 50;
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
  /** NaN, +Inf and -Inf among the sampled values (the buckets count the finite ones; none when none is finite). */
  nonfinite: { nan: number; posinf: number; neginf: number };
}

/** Consecutive steps at which a series was NaN or ±Inf (`value` is the first one's). */
export interface NonfiniteSpan {
  from: number;
  to: number;
  value: 'NaN' | '+Inf' | '-Inf';
}

export interface NonfiniteStop {
  step: number;
  file: string;
  line: number;
  message: string;
}

/**
 * What the banner says now: the newest NaN/Inf stop while it applies (`stop`), or the run's end (`ended`, with the
 * step its train loss went NaN/Inf when it ended that way, the stop that explains it, and the error it ended with).
 */
export type Banner =
  | { kind: 'stop'; stop: NonfiniteStop }
  | { kind: 'ended'; step: number; lossNonfiniteFrom?: number; stop?: NonfiniteStop; error?: string };

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
  nonfinite: NonfiniteStop[];
  /** Spans of NaN/±Inf values per scalar series key (same keys as `scalars`). */
  nonfiniteScalars: Record<string, NonfiniteSpan[]>;
  banner?: Banner;
  /** Processes of the run that said hello and not yet bye (the run has ended when the last one leaves). */
  processes: number[];
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
    nonfiniteScalars: {},
    processes: [],
    timers: {},
    lastStep: -1,
    events: 0,
  };
}

/**
 * Applies one event to the run (mutating it, for speed with many events) and returns it. The event is read with the
 * contract's parseRunEvent (its keys and their types, generated from core/protocol/): one that does not parse, or
 * of a type the contract does not know, is only counted.
 */
export function applyEvent(run: RunSnapshot, received: RunEvent): RunSnapshot {
  run.events++;
  const counted = finiteNumber(received.step);
  if (counted !== undefined) run.lastStep = Math.max(run.lastStep, counted);
  const parsed = parseRunEvent(received);
  if (!parsed.ok) return run;
  const event = parsed.event;
  const step = 'step' in event ? finiteNumber(event.step) : undefined;
  switch (event.type) {
    case 'scalars': {
      const values = event.values;
      if (step === undefined) break;
      const split = event.split ?? 'train';
      for (const [name, raw] of Object.entries(values)) {
        // NaN/Inf are kept (as gaps in the plot, and marker spans) so a blow-up is visible rather than dropped.
        const value = scalarValue(raw);
        if (value === undefined) continue;
        const key = `${split}/${name}`;
        const series = (run.scalars[key] ??= { steps: [], values: [] });
        const last = series.steps.length - 1;
        const previousNonfinite = last >= 0 && series.steps[last] !== step && !Number.isFinite(series.values[last]);
        push(series, step, value);
        if (!Number.isFinite(value)) markNonfinite(run, key, step, value, previousNonfinite);
      }
      const loss = scalarValue(values.loss);
      if (split === 'train' && run.banner?.kind === 'stop' && loss !== undefined && Number.isFinite(loss)) {
        if (step > run.banner.stop.step) run.banner = undefined; // the loss is finite again: the stop no longer applies
      }
      break;
    }
    case 'phases': {
      const tally = run.phaseTally;
      if (tally.final) break;
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
      const steps = event.steps;
      if (steps < 1) break;
      run.phaseTally.final = true;
      run.phaseTotals = cleanPhases(event.seconds);
      run.phaseSteps = Math.round(steps);
      break;
    }
    case 'histogram': {
      const { name, kind, counts } = event;
      const edges = event.edges.map(finiteNumber);
      if (!isNumberArray(edges)) break;
      if (counts.length ? edges.length !== counts.length + 1 : edges.length > 1) break;
      const nonfinite = nonfiniteCounts(event.nonfinite);
      if (counts.length === 0 && nonfinite.nan + nonfinite.posinf + nonfinite.neginf === 0) break;
      const histogramKind = kind === 'grad' ? 'grad' : 'weight';
      run.histograms[`${histogramKind}:${name}`] = {
        name,
        kind: histogramKind,
        step: step ?? -1,
        edges: counts.length ? edges : [],
        counts,
        nonfinite,
      };
      break;
    }
    case 'memory': {
      const bytes = finiteNumber(event.cuda_allocated) ?? finiteNumber(event.cpu_rss_bytes);
      if (step !== undefined && bytes !== undefined) push(run.memory, step, bytes);
      break;
    }
    case 'nonfinite': {
      const stop: NonfiniteStop = {
        step: step ?? -1,
        file: event.file ?? '',
        line: event.line ?? 0,
        message: event.message ?? 'NaN/Inf',
      };
      run.nonfinite.push(stop);
      run.banner = { kind: 'stop', stop }; // the newest stop replaces an older one (or the end of an earlier run)
      break;
    }
    case 'hello': {
      const pid = event.pid ?? undefined;
      if (pid !== undefined && !run.processes.includes(pid)) run.processes.push(pid);
      if (run.banner?.kind === 'ended') run.banner = undefined; // a new process: the run goes on
      break;
    }
    case 'bye': {
      const pid = event.pid ?? undefined;
      run.processes = run.processes.filter((known) => known !== pid);
      if (run.processes.length === 0) endRun(run);
      break;
    }
    case 'run-finished': {
      endRun(run, event.error || undefined);
      break;
    }
    case 'timer': {
      const seconds = finiteNumber(event.seconds);
      if (seconds === undefined || seconds < 0) break;
      const timer = (run.timers[event.name] ??= { name: event.name, last: 0, total: 0, calls: 0 });
      timer.last = seconds;
      timer.total += seconds;
      timer.calls++;
      if (typeof event.file === 'string') timer.file = event.file;
      if (event.line !== undefined && event.line !== null) timer.line = event.line;
      break;
    }
    default:
      break;
  }
  return run;
}

/** A scalar as it arrives: a number, null or one of the strings JSON-safe encoding gives NaN and ±Inf. */
function scalarValue(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (value === null || value === 'NaN') return Number.NaN;
  if (value === 'Infinity') return Number.POSITIVE_INFINITY;
  if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
  return undefined;
}

/** Extends the series' last span when its previous point was non-finite too, else opens a new span. */
function markNonfinite(run: RunSnapshot, key: string, step: number, value: number, extend: boolean): void {
  const spans = (run.nonfiniteScalars[key] ??= []);
  const last = spans[spans.length - 1];
  if (last && (extend || last.to === step)) {
    last.to = Math.max(last.to, step);
    return;
  }
  spans.push({ from: step, to: step, value: Number.isNaN(value) ? 'NaN' : value > 0 ? '+Inf' : '-Inf' });
  if (spans.length > MAX_NONFINITE_SPANS) spans.splice(MAX_NONFINITE_SPANS / 2, 1);
}

/** The run ended: the banner says so, with the step the train loss went NaN/Inf when it ended that way. */
function endRun(run: RunSnapshot, error?: string): void {
  const loss = run.scalars['train/loss'];
  const spans = run.nonfiniteScalars['train/loss'] ?? [];
  const lastSpan = spans[spans.length - 1];
  const endedNonfinite =
    loss !== undefined && loss.values.length > 0 && !Number.isFinite(loss.values[loss.values.length - 1]);
  const banner: Banner = { kind: 'ended', step: run.lastStep };
  if (endedNonfinite && lastSpan) {
    banner.lossNonfiniteFrom = lastSpan.from;
    const explaining = run.nonfinite.filter((stop) => stop.step <= lastSpan.from).pop() ?? run.nonfinite[0];
    if (explaining) banner.stop = explaining;
  }
  if (error) banner.error = error;
  run.banner = banner;
}

function nonfiniteCounts(counts: NonfiniteCounts | null | undefined): Histogram['nonfinite'] {
  const count = (value: number | null | undefined) => Math.max(0, value ?? 0);
  return { nan: count(counts?.nan), posinf: count(counts?.posinf), neginf: count(counts?.neginf) };
}

function noPhases(): Record<Phase, number> {
  return { data: 0, forward: 0, backward: 0, optimizer: 0, other: 0 };
}

/** Seconds per phase from an event, a missing, negative or non-finite figure read as 0. */
function cleanPhases(seconds: Record<string, WireNumber>): Record<Phase, number> {
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

function isNumberArray(value: (number | undefined)[]): value is number[] {
  return value.every((item) => item !== undefined);
}
