/** "Debug Training" through torchrun: the debugpy launch fields, the ranks option, and debugpy's child sessions. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type DistributedLaunchConfig,
  toTorchrunLaunch,
  torchrunArgs,
  torchrunProblem,
  workerAttachEndpoint,
} from '../../extension/src/debug/torchrun';

const base: DistributedLaunchConfig = {
  type: 'tensorsight',
  request: 'launch',
  name: 'Debug Training',
  program: '/w/train.py',
  args: ['--epochs', '1'],
  cwd: '/w',
  options: { measure: true },
};

function withoutProgram(config: DistributedLaunchConfig): DistributedLaunchConfig {
  const copy = { ...config };
  delete copy.program;
  return copy;
}

void describe('toTorchrunLaunch', () => {
  void test('launches torch.distributed.run on loopback with the program and its args, following subprocesses', () => {
    const launch = toTorchrunLaunch({ ...base, torchrun: { nprocPerNode: 2 } });
    assert.equal(launch.module, 'torch.distributed.run');
    assert.equal('program' in launch, false, 'debugpy rejects program and module together');
    assert.deepEqual(launch.args, [
      '--nproc-per-node',
      '2',
      '--rdzv-backend',
      'c10d',
      '--rdzv-endpoint',
      '127.0.0.1:0',
      '--local-addr',
      '127.0.0.1',
      '/w/train.py',
      '--epochs',
      '1',
    ]);
    assert.equal(launch.subProcess, true);
    assert.equal('torchrun' in launch, false, 'debugpy does not know the torchrun block');
    assert.equal(launch.cwd, '/w');
    assert.deepEqual(launch.options, { measure: true });
  });

  void test('a module program runs as `-m module` after torchrun flags', () => {
    const launch = toTorchrunLaunch({
      ...withoutProgram(base),
      module: 'pkg.train',
      args: [],
      torchrun: { nprocPerNode: 4 },
    });
    assert.equal(launch.module, 'torch.distributed.run');
    assert.deepEqual((launch.args as string[]).slice(-2), ['-m', 'pkg.train']);
    assert.deepEqual((launch.args as string[]).slice(0, 2), ['--nproc-per-node', '4']);
  });

  void test('standalone, explicit endpoint, port, restarts and extra flags', () => {
    assert.deepEqual(torchrunArgs({ nprocPerNode: 'auto', standalone: true }), [
      '--nproc-per-node',
      'auto',
      '--standalone',
      '--local-addr',
      '127.0.0.1',
    ]);
    assert.deepEqual(torchrunArgs({ rdzvPort: 29400, maxRestarts: 0, extraArgs: ['--log-dir', 'logs'] }), [
      '--nproc-per-node',
      '2',
      '--rdzv-backend',
      'c10d',
      '--rdzv-endpoint',
      '127.0.0.1:29400',
      '--local-addr',
      '127.0.0.1',
      '--max-restarts',
      '0',
      '--log-dir',
      'logs',
    ]);
    const multiNode = torchrunArgs({ nprocPerNode: 8, nnodes: '2', rdzvEndpoint: 'head:29400' });
    assert.deepEqual(multiNode, [
      '--nproc-per-node',
      '8',
      '--nnodes',
      '2',
      '--rdzv-backend',
      'c10d',
      '--rdzv-endpoint',
      'head:29400',
    ]);
  });

  void test('ranks become the agent option and leave the debugpy config', () => {
    const launch = toTorchrunLaunch({ ...base, torchrun: { nprocPerNode: 2 }, ranks: [1] });
    assert.deepEqual(launch.options, { measure: true, ranks: [1] });
    assert.equal('ranks' in launch, false);
    assert.equal('ranks' in (base.options ?? {}), false, 'the input is not mutated');
  });

  void test('a shell-style args string is split into words for torchrun', () => {
    const launch = toTorchrunLaunch({ ...base, args: '--epochs 3  --lr 0.1', torchrun: {} });
    assert.deepEqual((launch.args as string[]).slice(-5), ['/w/train.py', '--epochs', '3', '--lr', '0.1']);
  });

  void test('without torchrun or ranks the configuration is unchanged', () => {
    const launch = toTorchrunLaunch(base);
    assert.deepEqual(launch, base);
    assert.notEqual(launch, base);
  });
});

void test('torchrunProblem explains bad settings', () => {
  assert.equal(torchrunProblem({ ...base, torchrun: { nprocPerNode: 2 }, ranks: [0, 1] }), undefined);
  assert.equal(torchrunProblem(base), undefined);
  assert.match(String(torchrunProblem({ ...base, ranks: [-1] })), /ranks/);
  assert.match(String(torchrunProblem({ ...base, ranks: 1 as unknown as number[] })), /ranks/);
  assert.match(String(torchrunProblem({ ...base, torchrun: { nprocPerNode: 0 } })), /nprocPerNode/);
  assert.match(String(torchrunProblem({ ...base, torchrun: { nprocPerNode: 'many' } })), /nprocPerNode/);
  assert.equal(torchrunProblem({ ...base, torchrun: { nprocPerNode: 'gpu' } }), undefined);
  assert.match(String(torchrunProblem({ ...base, torchrun: { nnodes: 2 } })), /rdzvEndpoint/);
  assert.match(
    String(torchrunProblem({ ...base, torchrun: { nnodes: 2, standalone: true, rdzvEndpoint: 'h:1' } })),
    /single node/,
  );
  assert.match(String(torchrunProblem({ ...base, torchrun: { rdzvPort: 70000 } })), /rdzvPort/);
  assert.match(String(torchrunProblem({ ...base, torchrun: { extraArgs: [1] as unknown as string[] } })), /extraArgs/);
  assert.match(String(torchrunProblem({ ...withoutProgram(base), torchrun: {} })), /program/);
});

void test('workerAttachEndpoint recognises the child session debugpy starts for each worker', () => {
  // The configuration debugpy 1.8 sends in its startDebugging reverse request for a followed subprocess.
  const child = {
    type: 'tensorsight',
    name: 'Subprocess 4242',
    request: 'attach',
    subProcessId: 4242,
    connect: { host: '127.0.0.1', port: 53111 },
  };
  assert.deepEqual(workerAttachEndpoint(child), { host: '127.0.0.1', port: 53111, pid: 4242 });
  assert.deepEqual(workerAttachEndpoint({ ...child, connect: { port: 1 } }), { host: '127.0.0.1', port: 1, pid: 4242 });
  assert.equal(workerAttachEndpoint({ ...child, request: 'launch' }), undefined);
  assert.equal(workerAttachEndpoint({ ...child, subProcessId: undefined }), undefined);
  assert.equal(workerAttachEndpoint({ ...child, connect: undefined }), undefined);
  assert.equal(workerAttachEndpoint({ type: 'tensorsight', request: 'attach', connect: { port: 5678 } }), undefined);
});
