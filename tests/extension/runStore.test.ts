/** Reduction of hub run events into the training panel's series, phases and histograms. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyEvent, emptyRun, MAX_POINTS, phaseShares } from '../../extension/src/panel/runStore';

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
