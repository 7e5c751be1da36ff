/** Reduction of hub run events into the training panel's series, phases and histograms. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyEvent, emptyRun, MAX_NONFINITE_SPANS, MAX_POINTS, phaseShares } from '../../extension/src/panel/runStore';

test('scalars become per-split series; NaN kept as a gap; same step overwritten', () => {
  const run = emptyRun('s');
  applyEvent(run, {
    type: 'scalars',
    step: 0,
    split: 'train',
    values: { loss: 2.0, lr: 0.1, 'grad_norm/fc.weight': 3 },
  });
  applyEvent(run, { type: 'scalars', step: 1, values: { loss: Number.NaN } });
  applyEvent(run, { type: 'scalars', step: 1, values: { loss: 1.5 } });
  applyEvent(run, { type: 'scalars', step: 1, split: 'val', values: { loss: 1.9, note: 'text' } });
  assert.deepEqual(run.scalars['train/loss'], { steps: [0, 1], values: [2.0, 1.5] });
  assert.deepEqual(run.scalars['train/lr'], { steps: [0], values: [0.1] });
  assert.deepEqual(run.scalars['train/grad_norm/fc.weight']?.values, [3]);
  assert.deepEqual(run.scalars['val/loss'], { steps: [1], values: [1.9] });
  assert.equal(run.scalars['val/note'], undefined);
  assert.equal(run.lastStep, 1);
  applyEvent(run, { type: 'scalars', step: 2, values: { loss: Number.NaN } });
  assert.ok(Number.isNaN(run.scalars['train/loss']?.values[2]));
});

test('phases accumulate and give shares; bad values ignored', () => {
  const run = emptyRun('s');
  assert.equal(phaseShares(run), undefined);
  applyEvent(run, {
    type: 'phases',
    step: 0,
    seconds: { data: 0.6, forward: 0.2, backward: 0.1, optimizer: 0.1, other: 0 },
  });
  applyEvent(run, {
    type: 'phases',
    step: 1,
    seconds: { data: 0.6, forward: 0.2, backward: 0.1, optimizer: 0.1, other: -5 },
  });
  const shares = phaseShares(run);
  assert.ok(shares);
  assert.equal(run.phaseSteps, 2); // step 0 and step 1: no later steps yet, so the first is counted
  assert.ok(Math.abs((shares?.data ?? 0) - 0.6) < 1e-9);
  assert.equal(shares?.other, 0);
});

test('the first step leaves the breakdown once three later steps are measured, as the lens and the summary count it', () => {
  const run = emptyRun('s');
  const step = (n: number, other: number) =>
    applyEvent(run, { type: 'phases', step: n, seconds: { data: 0, forward: 0.1, backward: 0, optimizer: 0, other } });
  step(1, 0.9); // worker start-up and lazy initialisation
  assert.equal(run.phaseSteps, 1);
  assert.ok(Math.abs((phaseShares(run)?.other ?? 0) - 0.9) < 1e-9);
  step(2, 0.1);
  step(3, 0.1);
  assert.equal(run.phaseSteps, 3);
  step(4, 0.1);
  assert.equal(run.phaseSteps, 3);
  assert.ok(Math.abs((phaseShares(run)?.other ?? 0) - 0.5) < 1e-9);
  applyEvent(run, {
    type: 'phase-summary',
    steps: 9,
    seconds: { data: 0.9, forward: 0.9, backward: 0, optimizer: 0, other: 0 },
  });
  step(10, 5);
  assert.equal(run.phaseSteps, 9);
  assert.ok(Math.abs((phaseShares(run)?.other ?? 1) - 0) < 1e-9);
});

test('histograms keep the latest per (kind, name) and reject malformed ones', () => {
  const run = emptyRun('s');
  applyEvent(run, { type: 'histogram', step: 0, name: 'fc.weight', kind: 'weight', edges: [0, 1, 2], counts: [3, 4] });
  applyEvent(run, {
    type: 'histogram',
    step: 100,
    name: 'fc.weight',
    kind: 'weight',
    edges: [0, 1, 2],
    counts: [5, 6],
  });
  applyEvent(run, { type: 'histogram', step: 100, name: 'fc.weight', kind: 'grad', edges: [0, 1], counts: [1] });
  applyEvent(run, { type: 'histogram', step: 100, name: 'bad', kind: 'grad', edges: [0, 1], counts: [1, 2] });
  assert.deepEqual(Object.keys(run.histograms).sort(), ['grad:fc.weight', 'weight:fc.weight']);
  assert.deepEqual(run.histograms['weight:fc.weight']?.counts, [5, 6]);
});

test('nonfinite and memory events are recorded; unknown types only counted', () => {
  const run = emptyRun('s');
  applyEvent(run, { type: 'nonfinite', step: 4, file: '/w/t.py', line: 12, message: 'NaN in loss' });
  applyEvent(run, { type: 'memory', step: 4, cpu_rss_bytes: 1000 });
  applyEvent(run, { type: 'something-new', step: 9 });
  assert.deepEqual(run.nonfinite, [{ step: 4, file: '/w/t.py', line: 12, message: 'NaN in loss' }]);
  assert.deepEqual(run.memory, { steps: [4], values: [1000] });
  assert.equal(run.events, 3);
  assert.equal(run.lastStep, 9);
});

test('timer events add up per timer name, keeping the last measurement and where it was timed', () => {
  const run = emptyRun('s');
  applyEvent(run, { type: 'timer', name: 'data', seconds: 0.25, file: '/w/t.py', line: 7 });
  applyEvent(run, { type: 'timer', name: 'data', seconds: 0.5, file: '/w/t.py', line: 7 });
  applyEvent(run, { type: 'timer', name: 'step', seconds: 2 });
  applyEvent(run, { type: 'timer', name: 'bad', seconds: 'NaN' });
  assert.deepEqual(run.timers.data, { name: 'data', last: 0.5, total: 0.75, calls: 2, file: '/w/t.py', line: 7 });
  assert.deepEqual(run.timers.step, { name: 'step', last: 2, total: 2, calls: 1 });
  assert.equal(run.timers.bad, undefined, 'a non-finite measurement is not a time');
});

test('series stay bounded and keep the newest point', () => {
  const run = emptyRun('s');
  const total = MAX_POINTS * 3;
  for (let step = 0; step < total; step++) applyEvent(run, { type: 'scalars', step, values: { loss: step } });
  const series = run.scalars['train/loss'];
  assert.ok(series && series.steps.length <= MAX_POINTS);
  assert.equal(series?.steps.at(-1), total - 1);
  assert.equal(series?.steps[0], 0);
  assert.deepEqual(series?.steps, series?.values, 'steps and values stay aligned');
});

// ---- a run that goes NaN (issue 28): values as the server forwards them, stops, the end of the run ---------------

/** A scalars event as it reaches the extension: non-finite numbers are the strings JSON-safe encoding makes. */
const scalars = (step: number, loss: number | string, gradNorm: number | string = 1) =>
  ({
    type: 'scalars',
    step,
    split: 'train',
    values: { loss, grad_norm: gradNorm, 'grad_norm/fc.weight': gradNorm },
  }) as const;

test('NaN and Inf losses and gradient norms as they arrive stay in the series and become marker spans', () => {
  const run = emptyRun('s');
  for (let step = 1; step <= 3; step++) applyEvent(run, scalars(step, 2 / step, 4));
  applyEvent(run, scalars(4, '-Infinity', 'NaN'));
  for (let step = 5; step <= 8; step++) applyEvent(run, scalars(step, 'NaN', 'NaN'));
  applyEvent(run, scalars(9, 0.5, 3)); // recovered (a loss scaler skipped the bad steps)
  applyEvent(run, scalars(10, 'Infinity', 'Infinity'));
  const loss = run.scalars['train/loss'];
  assert.deepEqual(loss?.steps, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'the NaN steps are kept, not dropped');
  assert.equal(loss?.values[3], Number.NEGATIVE_INFINITY);
  assert.ok(Number.isNaN(loss?.values[5]));
  assert.deepEqual(run.nonfiniteScalars['train/loss'], [
    { from: 4, to: 8, value: '-Inf' },
    { from: 10, to: 10, value: '+Inf' },
  ]);
  assert.deepEqual(run.nonfiniteScalars['train/grad_norm/fc.weight'], [
    { from: 4, to: 8, value: 'NaN' },
    { from: 10, to: 10, value: '+Inf' },
  ]);
  assert.equal(run.nonfiniteScalars['train/lr'], undefined);
});

test('marker spans stay bounded and keep the first one and the newest', () => {
  const run = emptyRun('s');
  for (let step = 0; step < 4 * MAX_NONFINITE_SPANS; step++) applyEvent(run, scalars(step, step % 2 ? 'NaN' : 1));
  const spans = run.nonfiniteScalars['train/loss'] ?? [];
  assert.equal(spans.length, MAX_NONFINITE_SPANS);
  assert.equal(spans[0]?.from, 1);
  assert.equal(spans.at(-1)?.from, 4 * MAX_NONFINITE_SPANS - 1);
});

test('the banner shows the newest stop, drops it once the loss is finite again, and the run end replaces it', () => {
  const run = emptyRun('s');
  const banner = () => run.banner; // read afresh (TypeScript would keep an earlier narrowing)
  const stop = (step: number, message: string) =>
    applyEvent(run, { type: 'nonfinite', step, file: '/w/losses.py', line: 13, message });
  applyEvent(run, { type: 'hello', pid: 7 });
  applyEvent(run, scalars(1, 2));
  assert.equal(run.banner, undefined);
  stop(2, 'torch.log made 1 -Inf');
  applyEvent(run, scalars(2, 'NaN', 'NaN'));
  assert.deepEqual(run.banner, {
    kind: 'stop',
    stop: { step: 2, file: '/w/losses.py', line: 13, message: 'torch.log made 1 -Inf' },
  });
  applyEvent(run, scalars(3, 1.5)); // continued past the stop: the loss is finite again
  assert.equal(run.banner, undefined, 'a stop that no longer applies does not stay');
  stop(5, 'torch.exp made 3 +Inf');
  assert.equal((banner() as { stop?: { message: string } }).stop?.message, 'torch.exp made 3 +Inf', 'the newest stop');
  applyEvent(run, scalars(5, 'Infinity', 'NaN'));
  applyEvent(run, scalars(6, 'NaN', 'NaN'));
  assert.equal(banner()?.kind, 'stop', 'still NaN: the stop still applies');
  applyEvent(run, { type: 'bye', pid: 7 });
  assert.deepEqual(banner(), {
    kind: 'ended',
    step: 6,
    lossNonfiniteFrom: 5,
    stop: { step: 5, file: '/w/losses.py', line: 13, message: 'torch.exp made 3 +Inf' },
  });
  assert.equal(run.nonfinite.length, 2, 'the stops themselves are kept');
});

test('the run ends when its last process says bye, or when the doctor reports it finished', () => {
  const run = emptyRun('s');
  const banner = () => run.banner;
  applyEvent(run, { type: 'hello', pid: 1 });
  applyEvent(run, { type: 'hello', pid: 2 });
  applyEvent(run, scalars(1, 0.5));
  applyEvent(run, { type: 'bye', pid: 2 });
  assert.equal(run.banner, undefined, 'rank 0 still trains');
  applyEvent(run, { type: 'bye', pid: 1 });
  assert.deepEqual(banner(), { kind: 'ended', step: 1 });
  applyEvent(run, { type: 'hello', pid: 3 }); // a restarted process: the run goes on
  assert.equal(banner(), undefined);
  applyEvent(run, { type: 'run-finished', error: 'RuntimeError: CUDA error' });
  assert.deepEqual(banner(), { kind: 'ended', step: 1, error: 'RuntimeError: CUDA error' });
});

test('a histogram with no finite value keeps its NaN/Inf counts and no buckets', () => {
  const run = emptyRun('s');
  const nonfinite = { nan: 64, posinf: 0, neginf: 2 };
  applyEvent(run, { type: 'histogram', step: 100, name: 'fc.bias', kind: 'grad', edges: [], counts: [], nonfinite });
  applyEvent(run, { type: 'histogram', step: 100, name: 'empty', kind: 'grad', edges: [], counts: [] });
  applyEvent(run, {
    type: 'histogram',
    step: 100,
    name: 'fc.weight',
    kind: 'weight',
    edges: [0, 1],
    counts: [3],
    nonfinite: { nan: 1 },
  });
  assert.deepEqual(run.histograms['grad:fc.bias'], {
    name: 'fc.bias',
    kind: 'grad',
    step: 100,
    edges: [],
    counts: [],
    nonfinite,
  });
  assert.equal(run.histograms['grad:empty'], undefined, 'nothing to show');
  assert.deepEqual(run.histograms['weight:fc.weight']?.nonfinite, { nan: 1, posinf: 0, neginf: 0 });
});
