/** Status bar wording for run state and GPU. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gpuStatusText, gpuTooltip, runStatusText } from '../../extension/src/status/statusText';

const t = (message: string, ...args: Array<string | number>) =>
  message.replace(/\{(\d)\}/g, (_, i: string) => String(args[Number(i)]));

test('run state text', () => {
  const base = { serverState: 'ready' as const, sessions: 0, lastStep: -1, trusted: true };
  assert.equal(runStatusText(base, t), '$(pulse) TensorSight: ready');
  assert.equal(runStatusText({ ...base, serverState: 'failed' }, t), '$(error) TensorSight: server not running');
  assert.equal(runStatusText({ ...base, sessions: 1 }, t), '$(debug-alt) TensorSight: debugging');
  assert.equal(runStatusText({ ...base, sessions: 1, lastStep: 42 }, t), '$(debug-alt) TensorSight: training, step 42');
  assert.equal(runStatusText({ ...base, trusted: false, sessions: 1 }, t), '$(shield) TensorSight: restricted');
});

test('GPU text shows the busiest GPU, hides when none', () => {
  const gib = 1024 ** 3;
  const gpu = {
    available: true,
    gpus: [
      { index: 0, name: 'A', utilization: 10, memoryUsed: 1 * gib, memoryTotal: 16 * gib },
      {
        index: 1,
        name: 'B',
        utilization: 87.4,
        memoryUsed: 3.25 * gib,
        memoryTotal: 24 * gib,
        processMemoryUsed: 2 * gib,
      },
    ],
  };
  assert.equal(gpuStatusText(gpu), '$(dashboard) GPU 1 87% · 3.3/24.0 GiB +1');
  assert.match(gpuTooltip(gpu, t), /GPU 1 B: 87%, 3\.3\/24\.0 GiB, training process 2\.0 GiB/);
  assert.equal(gpuStatusText({ available: false, gpus: [], message: 'no NVML' }), undefined);
  assert.equal(gpuTooltip({ available: false, gpus: [], message: 'no NVML' }, t), 'no NVML');
  assert.equal(gpuStatusText(undefined), undefined);
});
