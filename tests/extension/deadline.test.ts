/**
 * The bounded wait behind every custom request to the language server: an answer in time is passed on, a server
 * that never answers gives `undefined` once the deadline passes (and the request is given up exactly once), and a
 * failure in time stays a failure.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withinTime } from '../../extension/src/common/deadline';

test('an answer within the time is returned and nothing is given up', async () => {
  let expired = 0;
  const answer = await withinTime(Promise.resolve({ token: 't' }), 1000, () => (expired += 1));
  assert.deepEqual(answer, { token: 't' });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(expired, 0);
});

test('a server that never answers: undefined after the deadline, given up once', async () => {
  let expired = 0;
  const started = Date.now();
  const answer = await withinTime(new Promise<string>(() => undefined), 50, () => (expired += 1));
  assert.equal(answer, undefined);
  assert.equal(expired, 1);
  assert.ok(Date.now() - started >= 45, 'waited for the deadline');
});

test('a failure within the time reaches the caller', async () => {
  await assert.rejects(
    withinTime(Promise.reject(new Error('server gone')), 1000, () => undefined),
    /server gone/,
  );
});
