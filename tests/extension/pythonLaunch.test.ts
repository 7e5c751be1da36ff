/**
 * Every Python process the extension starts runs isolated from the workspace (common/pythonLaunch.ts), no secret
 * reaches the output channel (common/redaction.ts), a remote host is told from loopback, and the server's batched run
 * events reach the rest of the extension one by one (server/runEvents.ts). The Python tests (tests/server/test_isolated_start.py)
 * run the very argv built here against a hostile workspace.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { extensionPaths } from '../../extension/src/common/paths';
import { isolatedLaunch, moduleLaunch, serverLaunch, toolLaunch } from '../../extension/src/common/pythonLaunch';
import {
  forgetSecrets,
  REDACTED,
  redactingChannel,
  redactSecrets,
  rememberSecret,
} from '../../extension/src/common/redaction';
import { isLoopbackHost } from '../../extension/src/debug/torchrun';
import { runEventsOf } from '../../extension/src/server/runEvents';

const paths = extensionPaths('/ext');
const BOOT = '/ext/pyhelpers/tensorsight/launch.py';

test('the language server starts isolated (-I, the bootstrap), from pyhelpers, with the bundled libs first', () => {
  const launch = serverLaunch('/usr/bin/python3', paths, { PYTHONPATH: '/user', PATH: '/bin', X: undefined }, ':');
  assert.equal(launch.command, '/usr/bin/python3');
  assert.deepEqual(launch.args, [
    '-I',
    BOOT,
    '--path',
    '/ext/extension/bundled/libs',
    '--path',
    '/ext/pyhelpers',
    '-m',
    'tensorsight.server',
  ]);
  assert.equal(launch.cwd, '/ext/pyhelpers');
  assert.ok(!launch.args.includes('/user'), "the server does not import from the user's PYTHONPATH");
  assert.equal(launch.env.PYTHONPATH, '/ext/pyhelpers:/user');
  assert.equal(launch.env.PATH, '/bin');
  assert.equal('X' in launch.env, false);
});

test("a CLI tool starts in pyhelpers, sees the user's PYTHONPATH behind the stdlib, and moves to the workspace", () => {
  const launch = toolLaunch('/py', paths, 'doctor', '/w/train.py', '/w', { PYTHONPATH: '/a::/b' }, ':');
  assert.deepEqual(launch.args, [
    '-E', // the user's own packages (user site) stay: the tool runs the user's script
    BOOT,
    '--path',
    '/ext/pyhelpers',
    '--after',
    '/a',
    '--after',
    '/b',
    '--chdir',
    '/w',
    '-m',
    'tensorsight',
    'doctor',
    '--json',
    '/w/train.py',
  ]);
  assert.equal(launch.cwd, '/ext/pyhelpers');
  assert.equal(launch.env.PYTHONUNBUFFERED, '1');
});

test('any other module (TensorBoard, the debug adapter) goes through the same bootstrap', () => {
  const board = moduleLaunch('/py', paths, 'tensorboard.main', ['--logdir', 'runs'], { PYTHONPATH: '.' }, ':');
  assert.deepEqual(board.args, ['-E', BOOT, '--after', '.', '-m', 'tensorboard.main', '--logdir', 'runs']);
  const adapter = isolatedLaunch('/py', '/ext/pyhelpers', { module: 'debugpy.adapter', searchPath: ['/libs'] }, {});
  assert.deepEqual(adapter.args, ['-I', BOOT, '--path', '/libs', '-m', 'debugpy.adapter']);
});

test('tokens are redacted: remembered ones anywhere, and any JSON "token" or TENSORSIGHT_TOKEN value', () => {
  forgetSecrets();
  const token = 'Zq3-secret-token-value_0123456789';
  const trace = `[Trace] Received response 'tensorsight/startSession - (3)' in 2ms.\nResult: {\n    "address": "127.0.0.1:4000",\n    "token": "${token}"\n}`;
  const redacted = redactSecrets(trace);
  assert.ok(!redacted.includes(token));
  assert.match(redacted, /"token": "<redacted>"/);
  assert.match(redacted, /"address": "127\.0\.0\.1:4000"/);
  assert.equal(redactSecrets(`env TENSORSIGHT_TOKEN=${token} X=1`), `env TENSORSIGHT_TOKEN=${REDACTED} X=1`);
  assert.equal(redactSecrets(`{"TENSORSIGHT_TOKEN": "${token}"}`), `{"TENSORSIGHT_TOKEN": "${REDACTED}"}`);
  assert.equal(redactSecrets(JSON.stringify({ params: JSON.stringify({ token }) })).includes(token), false);
  rememberSecret(token);
  assert.equal(redactSecrets(`connected with ${token}.`), `connected with ${REDACTED}.`);
  rememberSecret('short');
  assert.equal(redactSecrets('a short line'), 'a short line', 'a short value is never treated as a secret');
  forgetSecrets();
});

test('the redacting channel redacts every text method and passes the rest through', () => {
  forgetSecrets();
  rememberSecret('0123456789abcdef');
  const written: string[] = [];
  const channel = {
    name: 'TensorSight',
    trace: (text: string) => written.push(`trace ${text}`),
    info: (text: string) => written.push(`info ${text}`),
    error: (error: string | Error) => written.push(`error ${error instanceof Error ? error.message : error}`),
    appendLine: (text: string) => written.push(`line ${text}`),
    show: () => written.push('show'),
  };
  const safe = redactingChannel(channel);
  safe.trace('Result: {"token": "abc"}');
  safe.info('x 0123456789abcdef y');
  safe.error(new Error('failed with 0123456789abcdef'));
  safe.appendLine('0123456789abcdef');
  safe.show();
  assert.equal(safe.name, 'TensorSight');
  assert.deepEqual(written, [
    `trace Result: {"token": "${REDACTED}"}`,
    `info x ${REDACTED} y`,
    `error failed with ${REDACTED}`,
    `line ${REDACTED}`,
    'show',
  ]);
  forgetSecrets();
});

test('loopback hosts are recognised; anything else is remote', () => {
  for (const host of ['127.0.0.1', 'localhost', '::1', '[::1]', '127.1.2.3', 'LOCALHOST'])
    assert.ok(isLoopbackHost(host), host);
  for (const host of ['10.0.0.2', 'example.com', '127.0.0.1.evil.com', '0.0.0.0', ''])
    assert.ok(!isLoopbackHost(host), host);
});

test('a runEvent batch from the server becomes one event at a time; malformed parts are left out', () => {
  const batch = { sessionId: 's', events: [{ type: 'hello', pid: 1 }, 'junk', { no: 'type' }, { type: 'bye' }] };
  assert.deepEqual(runEventsOf(batch), [
    { sessionId: 's', event: { type: 'hello', pid: 1 } },
    { sessionId: 's', event: { type: 'bye' } },
  ]);
  assert.deepEqual(runEventsOf({ sessionId: 's', event: { type: 'hello' } }), []);
  assert.deepEqual(runEventsOf(null), []);
});
