/**
 * What the status bar says, as pure functions of the server state, the running sessions and the GPU report, so the
 * wording is tested without an editor. Strings come in through `t` (vscode.l10n.t in the extension).
 */
import type { GpuParams } from '../server/protocol';

export type Translate = (message: string, ...args: Array<string | number>) => string;

export interface RunState {
  serverState: 'starting' | 'ready' | 'failed' | 'disabled' | 'stopped';
  sessions: number;
  lastStep: number;
  trusted: boolean;
}

export function runStatusText(state: RunState, t: Translate): string {
  if (!state.trusted) return `$(shield) ${t('TensorSight: restricted')}`;
  if (state.sessions > 0) {
    return state.lastStep >= 0
      ? `$(debug-alt) ${t('TensorSight: training, step {0}', state.lastStep)}`
      : `$(debug-alt) ${t('TensorSight: debugging')}`;
  }
  switch (state.serverState) {
    case 'ready':
      return `$(pulse) ${t('TensorSight: ready')}`;
    case 'starting':
      return `$(loading~spin) ${t('TensorSight: starting')}`;
    case 'failed':
      return `$(error) ${t('TensorSight: server not running')}`;
    case 'disabled':
      return `$(circle-slash) ${t('TensorSight: server off')}`;
    default:
      return `$(pulse) TensorSight`;
  }
}

const GIB = 1024 ** 3;

/** "GPU 0 45% · 3.2/24.0 GiB" for the busiest GPU, or undefined when there is none to show. */
export function gpuStatusText(gpu: GpuParams | undefined): string | undefined {
  if (!gpu?.available || gpu.gpus.length === 0) return undefined;
  const busiest = [...gpu.gpus].sort((a, b) => (b.utilization ?? -1) - (a.utilization ?? -1))[0];
  if (!busiest) return undefined;
  const more = gpu.gpus.length > 1 ? ` +${gpu.gpus.length - 1}` : '';
  return `$(dashboard) GPU ${busiest.index} ${formatPercent(busiest.utilization)} · ${formatGiB(busiest.memoryUsed)}/${formatGiB(
    busiest.memoryTotal,
  )} GiB${more}`;
}

export function gpuTooltip(gpu: GpuParams | undefined, t: Translate): string {
  if (!gpu) return t('No GPU report yet.');
  if (!gpu.available) return gpu.message ?? t('No GPU available.');
  return gpu.gpus
    .map((g) => {
      const own =
        g.processMemoryUsed !== undefined ? `, ${t('training process')} ${formatGiB(g.processMemoryUsed)} GiB` : '';
      return `GPU ${g.index} ${g.name}: ${formatPercent(g.utilization)}, ${formatGiB(g.memoryUsed)}/${formatGiB(g.memoryTotal)} GiB${own}`;
    })
    .join('\n');
}

/** NVML may not answer a figure (null on the wire): it shows as "?" rather than as a misleading 0. */
function formatGiB(bytes: number | null): string {
  return bytes === null ? '?' : (bytes / GIB).toFixed(1);
}

function formatPercent(value: number | null): string {
  return value === null ? '?%' : `${Math.round(value)}%`;
}
