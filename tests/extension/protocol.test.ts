/**
 * The generated run-event reader against what Python emits: tests/fixtures/run_events.json holds one event of each
 * type the editor receives, built from core/protocol/'s dataclasses and written as the server forwards them
 * (tests/support/run_event_samples.py; tests/core/test_protocol.py keeps it current). parseRunEvent must accept every
 * one, the training panel's reduction must take them in, and a malformed event is refused with the field at fault.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { applyEvent, emptyRun } from '../../extension/src/panel/runStore';
import {
  type Payloads,
  parsePayload,
  parseRunEvent,
  RUN_EVENT_TYPES,
  type RunEvent,
} from '../../extension/src/server/protocol';
import { REPO } from './support/paths';

const samples = JSON.parse(
  fs.readFileSync(path.join(REPO, 'tests', 'fixtures', 'run_events.json'), 'utf8'),
) as RunEvent[];

test('every event Python emits parses, and every run event type has one', () => {
  for (const sample of samples) {
    const parsed = parseRunEvent(sample);
    assert.ok(parsed.ok, `${sample.type}: ${parsed.ok ? '' : parsed.error}`);
    assert.equal(parsed.event.type, sample.type);
  }
  assert.deepEqual([...new Set(samples.map((sample) => sample.type))].sort(), [...RUN_EVENT_TYPES].sort());
});

test('the training panel takes in what Python emits', () => {
  const run = emptyRun('s');
  for (const sample of samples) applyEvent(run, sample);
  assert.equal(run.events, samples.length);
  assert.ok(Number.isNaN(run.scalars['train/loss']?.values[0]), 'the NaN loss arrives as "NaN" and stays a gap');
  assert.deepEqual(run.scalars['val/loss'], { steps: [2], values: [0.75] });
  assert.deepEqual(run.histograms['grad:fc.weight']?.nonfinite, { nan: 1, posinf: 0, neginf: 0 });
  assert.deepEqual(run.timers.data, {
    name: 'data',
    last: 0.0125,
    total: 0.0125,
    calls: 1,
    file: '/project/train.py',
    line: 7,
  });
  assert.deepEqual(run.nonfinite, [
    { step: 4, file: '/project/train.py', line: 12, message: 'Inf born here: div made 1 +Inf' },
  ]);
  assert.equal(run.phaseSteps, 4, 'the summary replaces the live tally');
  assert.equal(run.banner?.kind, 'ended');
});

test('a malformed run event is refused with the field at fault; unknown keys are ignored', () => {
  const refused = (value: unknown) => {
    const parsed = parseRunEvent(value);
    assert.ok(!parsed.ok, JSON.stringify(value));
    return parsed.error;
  };
  assert.match(refused({ type: 'timer', name: 3, seconds: 1 }), /'name' must be str/);
  assert.match(refused({ type: 'timer', seconds: 1 }), /'name' is missing/);
  assert.match(
    refused({ type: 'histogram', step: 1, name: 'w', kind: 'grad', edges: [0, 'x'], counts: [1] }),
    /'edges\[1\]'/,
  );
  assert.match(refused({ type: 'histogram', step: 1.5, name: 'w', kind: 'grad', edges: [], counts: [] }), /'step'/);
  assert.match(
    refused({ type: 'rank-state', rank: 0, world_size: 2, state: 's', since: 1, heartbeat: [] }),
    /heartbeat/,
  );
  assert.match(refused({ type: 'something-new' }), /unknown event type/);
  assert.match(refused({ step: 1 }), /without a type/);
  assert.match(refused(null), /object/);
  const timer = parseRunEvent({ type: 'timer', name: 'data', seconds: 'Infinity', extra: [1], file: null });
  assert.ok(timer.ok && timer.event.type === 'timer' && timer.event.seconds === 'Infinity');
});

// tests/fixtures/payloads.json (tests/support/payload_samples.py): the requests' payloads as Python writes them, and
// malformed ones with the field at fault; the server's parse_payload takes and refuses the same (test_payload_samples)
const payloads = JSON.parse(fs.readFileSync(path.join(REPO, 'tests', 'fixtures', 'payloads.json'), 'utf8')) as {
  accepted: Record<string, unknown[]>;
  refused: Array<{ payload: keyof Payloads; value: unknown; field: string }>;
};

test('every payload Python writes parses with the generated parsePayload', () => {
  assert.ok(Object.keys(payloads.accepted).length >= 8);
  for (const [name, values] of Object.entries(payloads.accepted)) {
    for (const value of values) {
      const parsed = parsePayload(name as keyof Payloads, value);
      assert.ok(parsed.ok, `${name}: ${parsed.ok ? '' : parsed.error}`);
      assert.deepEqual(parsed.value, value);
    }
  }
});

test('a malformed payload is refused naming the field, as on the Python side', () => {
  assert.ok(payloads.refused.length >= 5);
  for (const { payload, value, field } of payloads.refused) {
    const parsed = parsePayload(payload, value);
    assert.ok(!parsed.ok, `${payload} accepted ${JSON.stringify(value)}`);
    assert.ok(parsed.error.includes(`'${field}'`), `${payload}: ${parsed.error}`);
  }
  assert.equal(parsePayload('ReportedFinding', 'a finding').ok, false);
});
