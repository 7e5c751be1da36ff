/**
 * When the language server starts: on request, and again only when the workspace's trust no longer matches the
 * trust its running server was started with (the first F5 after trusting a folder). The trust-grant event and the
 * launch that waits for the server share one restart, so the session's hub is not closed by a second one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServerRestarts } from '../../extension/src/server/restarts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A server whose starts are recorded with the trust they were given; each start waits for its gate when gated. */
function fakeServer(gated = false) {
  const state = { trusted: false, starts: [] as boolean[], gates: [] as Array<ReturnType<typeof deferred>> };
  const restarts = new ServerRestarts(
    async (trusted) => {
      state.starts.push(trusted);
      if (!gated) return;
      const gate = deferred();
      state.gates.push(gate);
      await gate.promise;
    },
    () => state.trusted,
  );
  return { state, restarts };
}

const tick = () => new Promise((r) => setImmediate(r));

test('matchTrust restarts a server started untrusted once the workspace is trusted, and only then', async () => {
  const { state, restarts } = fakeServer();
  await restarts.matchTrust();
  assert.deepEqual(state.starts, [], 'nothing before the first start');
  await restarts.restart();
  assert.deepEqual(state.starts, [false]);
  await restarts.matchTrust();
  assert.deepEqual(state.starts, [false], 'trust unchanged: the running server stays');
  state.trusted = true;
  await restarts.matchTrust();
  assert.deepEqual(state.starts, [false, true], 'trusted now: one start, told it is trusted');
  await restarts.matchTrust();
  await restarts.matchTrust();
  assert.deepEqual(state.starts, [false, true]);
  await restarts.restart();
  assert.deepEqual(state.starts, [false, true, true], 'an explicit restart always starts');
});

test('the trust event and the launch waiting for the hub give one restart between them, in either order', async () => {
  for (const order of ['event first', 'launch first']) {
    const { state, restarts } = fakeServer(true);
    const first = restarts.restart();
    await tick();
    state.gates[0]?.resolve();
    await first;
    state.trusted = true;
    // both ask at once (the grant event and resolveDebugConfiguration race): one start, and both wait for it
    const event = restarts.matchTrust();
    const launch = restarts.matchTrust();
    let launchDone = false;
    void launch.then(() => (launchDone = true));
    await tick();
    assert.deepEqual(state.starts, [false, true], order);
    assert.equal(launchDone, false, `${order}: the launch waits for the trusted server`);
    state.gates[1]?.resolve();
    await Promise.all([event, launch]);
    assert.equal(launchDone, true);
    assert.deepEqual(state.starts, [false, true], `${order}: no second restart to close the new hub`);
  }
});

test('a restart asked for during a start gives exactly one more start, with the trust of that moment', async () => {
  const { state, restarts } = fakeServer(true);
  const first = restarts.restart();
  await tick();
  const again = restarts.restart();
  state.trusted = true;
  const alsoTrust = restarts.matchTrust();
  state.gates[0]?.resolve();
  await tick();
  assert.deepEqual(state.starts, [false, true]);
  state.gates[1]?.resolve();
  await Promise.all([first, again, alsoTrust]);
  assert.deepEqual(state.starts, [false, true]);
  assert.equal(restarts.busy, false);
});
