/** The serial runner behind language-server restarts: one run in flight, bursts folded into one more run. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SerialRunner } from '../../extension/src/common/serial';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('never two runs in flight; a burst during a run gives exactly one more run', async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  let runs = 0;
  const gates: Array<ReturnType<typeof deferred>> = [];
  const runner = new SerialRunner(async () => {
    runs++;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const gate = deferred();
    gates.push(gate);
    await gate.promise;
    inFlight--;
  });
  const first = runner.request();
  const burst = [runner.request(), runner.request(), runner.request()];
  assert.equal(runs, 1);
  gates[0]?.resolve();
  await new Promise((r) => setImmediate(r));
  assert.equal(runs, 2, 'the burst is folded into one follow-up run');
  gates[1]?.resolve();
  await Promise.all([first, ...burst]);
  assert.equal(runs, 2);
  assert.equal(maxInFlight, 1);
  assert.equal(runner.busy, false);
});

test('a failing run is reported and does not wedge the runner', async () => {
  const errors: unknown[] = [];
  let calls = 0;
  const runner = new SerialRunner(
    () => {
      calls++;
      return calls === 1 ? Promise.reject(new Error('boom')) : Promise.resolve();
    },
    (error) => errors.push(error),
  );
  await runner.request();
  await runner.request();
  assert.equal(calls, 2);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /boom/);
});

test('a request after a run finished starts a new run', async () => {
  let calls = 0;
  const runner = new SerialRunner(() => {
    calls++;
    return Promise.resolve();
  });
  await runner.request();
  await runner.request();
  assert.equal(calls, 2);
});
