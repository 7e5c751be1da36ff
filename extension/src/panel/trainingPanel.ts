/**
 * The training panel (webview): live plots of loss, learning rate, gradient norm per layer, the phase breakdown and
 * weight/gradient histograms of the current run, drawn with uPlot (bundled locally) in VS Code's theme colours.
 * Holds the RunStore of every session; the webview gets a throttled snapshot of the selected run.
 */
import * as path from 'node:path';
import type { ExtensionPaths } from '../common/paths';
import { env, l10n, Selection, Uri, ViewColumn, type WebviewPanel, window } from '../common/vscodeapi';
import { LAUNCH_OPTION_DEFAULTS, type RunEventParams } from '../server/protocol';
import { renderPage } from './html';
import { applyEvent, emptyRun, type RunSnapshot } from './runStore';

const UPDATE_INTERVAL_MS = 250;

export class TrainingPanel {
  private panel: WebviewPanel | undefined;
  private readonly runs = new Map<string, RunSnapshot>();
  private currentSession: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly paths: ExtensionPaths) {}

  /** Records a hub event; the panel (when open) is refreshed at most every UPDATE_INTERVAL_MS. */
  onRunEvent(params: RunEventParams): void {
    let run = this.runs.get(params.sessionId);
    if (!run) {
      run = emptyRun(params.sessionId);
      this.runs.set(params.sessionId, run);
      if (this.runs.size > 5) this.runs.delete(this.runs.keys().next().value as string);
    }
    applyEvent(run, params.event);
    this.currentSession = params.sessionId;
    this.scheduleUpdate();
  }

  /** The run of `sessionId`, or of the latest session that sent an event. */
  run(sessionId?: string): RunSnapshot | undefined {
    const id = sessionId ?? this.currentSession;
    return id ? this.runs.get(id) : undefined;
  }

  show(): void {
    if (this.panel) {
      this.panel.reveal();
      return;
    }
    const webviewRoot = Uri.file(this.paths.webview);
    const panel = window.createWebviewPanel(
      'tensorsight.training',
      l10n.t('TensorSight: Training'),
      ViewColumn.Beside,
      {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [webviewRoot],
      },
    );
    const asset = (name: string) =>
      panel.webview.asWebviewUri(Uri.file(path.join(this.paths.webview, name))).toString();
    panel.webview.html = renderPage({
      title: l10n.t('TensorSight: Training'),
      cspSource: panel.webview.cspSource,
      scripts: [asset('uPlot.iife.min.js'), asset('training.js')],
      styles: [asset('uPlot.min.css'), asset('webview.css')],
      lang: env.language(),
      initialData: { strings: panelStrings(), run: this.run() ?? null },
    });
    panel.onDidDispose(() => {
      this.panel = undefined;
    });
    panel.webview.onDidReceiveMessage((message: { type?: string; file?: string; line?: number }) => {
      if (message.type === 'open' && message.file) void openLocation(message.file, message.line ?? 1);
    });
    this.panel = panel;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.panel?.dispose();
  }

  private scheduleUpdate(): void {
    if (!this.panel || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const run = this.run();
      if (this.panel && run) void this.panel.webview.postMessage({ type: 'snapshot', run });
    }, UPDATE_INTERVAL_MS);
  }
}

export async function openLocation(file: string, line: number): Promise<void> {
  const editor = await window.showTextDocument(Uri.file(file), { preview: true, viewColumn: ViewColumn.One });
  const position = editor.document.lineAt(Math.min(Math.max(0, line - 1), editor.document.lineCount - 1)).range.start;
  editor.selection = new Selection(position, position);
  editor.revealRange(editor.document.lineAt(position.line).range);
}

function panelStrings(): Record<string, string> {
  return {
    waiting: l10n.t('Waiting for a training run: start "Debug Training" (F5) on a script that trains.'),
    loss: l10n.t('Loss'),
    lr: l10n.t('Learning rate'),
    gradNorm: l10n.t('Gradient norm per layer'),
    phases: l10n.t('Time per phase'),
    histograms: l10n.t('Weight and gradient histograms'),
    memory: l10n.t('Memory'),
    step: l10n.t('step'),
    data: l10n.t('data loading'),
    forward: l10n.t('forward'),
    backward: l10n.t('backward'),
    optimizer: l10n.t('optimizer'),
    other: l10n.t('other'),
    nonfinite: l10n.t('NaN/Inf stops'),
    timers: l10n.t('Timers (tensorsight.Timer)'),
    timerRow: l10n.t('{0}: last {1} ms, mean {2} ms over {3} calls'),
    noHistogram: l10n.t(
      'No histogram yet: one is recorded at the first step and every {0} steps (launch option "histogramEvery").',
      String(LAUNCH_OPTION_DEFAULTS.histogramEvery),
    ),
    // placeholders filled in by the webview ({0}: series, {1}: NaN, +Inf or -Inf, {2}, {3}: steps)
    nonfiniteAt: l10n.t('{0}: {1} at step {2}'),
    nonfiniteFromTo: l10n.t('{0}: {1} from step {2} to {3}'),
    runEnded: l10n.t('The run ended at step {0}.'),
    runEndedNonfinite: l10n.t('The run ended at step {0}: the training loss was NaN/Inf from step {1} on.'),
    runEndedError: l10n.t('It ended with an error: {0}'),
    histogramNonfinite: l10n.t('Not in the buckets: {0} NaN, {1} +Inf, {2} -Inf (sampled values).'),
    histogramNoFinite: l10n.t('No finite value at step {0}: {1} NaN, {2} +Inf, {3} -Inf (sampled values).'),
    noPhases: l10n.t('No phase timing yet: it appears after the first optimizer step of a measured run.'),
    steps: l10n.t('steps'),
  };
}
