/**
 * The two status bar items: the run state (server ready / training step / restricted), which opens the training
 * panel, and — when the language server reports a GPU — its utilisation and memory.
 */
import { readSettings } from '../common/settings';
import {
  type Disposable,
  l10n,
  StatusBarAlignment,
  type StatusBarItem,
  ThemeColor,
  window,
  workspace,
} from '../common/vscodeapi';
import type { ServerState } from '../server/languageServer';
import type { GpuParams } from '../server/protocol';
import { gpuStatusText, gpuTooltip, runStatusText } from './statusText';

export class StatusBar implements Disposable {
  private readonly runItem: StatusBarItem;
  private readonly gpuItem: StatusBarItem;
  private serverState: ServerState = 'stopped';
  private sessions = 0;
  private lastStep = -1;
  private serverFailure = '';

  constructor() {
    this.runItem = window.createStatusBarItem('tensorsight.status', StatusBarAlignment.Left, 50);
    this.runItem.name = 'TensorSight';
    this.runItem.command = 'tensorsight.showTrainingPanel';
    this.gpuItem = window.createStatusBarItem('tensorsight.gpu', StatusBarAlignment.Left, 49);
    this.gpuItem.name = l10n.t('TensorSight GPU');
    this.gpuItem.command = 'tensorsight.showTrainingPanel';
    this.render();
    this.runItem.show();
  }

  setServerState(state: ServerState, failure = ''): void {
    this.serverState = state;
    this.serverFailure = failure;
    this.render();
  }

  setSessions(count: number): void {
    this.sessions = count;
    if (count === 0) this.lastStep = -1;
    this.render();
  }

  setStep(step: number): void {
    if (step === this.lastStep) return;
    this.lastStep = step;
    this.render();
  }

  setGpu(gpu: GpuParams): void {
    const text = readSettings().statusBarGpu ? gpuStatusText(gpu) : undefined;
    if (!text) {
      this.gpuItem.hide();
      return;
    }
    this.gpuItem.text = text;
    this.gpuItem.tooltip = gpuTooltip(gpu, l10n.t);
    this.gpuItem.show();
  }

  render(): void {
    const trusted = workspace.isTrusted();
    this.runItem.text = runStatusText(
      { serverState: this.serverState, sessions: this.sessions, lastStep: this.lastStep, trusted },
      l10n.t,
    );
    this.runItem.tooltip =
      this.serverState === 'failed'
        ? l10n.t('The TensorSight language server is not running: {0}', this.serverFailure)
        : l10n.t('TensorSight: show the training panel');
    this.runItem.backgroundColor =
      this.serverState === 'failed' ? new ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.runItem.dispose();
    this.gpuItem.dispose();
  }
}
