/**
 * The results view (webview) of the CLI tools: a summary, the findings, and every table of the report (the profile's
 * time per phase and top functions, the shape map) sortable by any column, with a click on a row opening its source
 * line. One panel, reused. `reportLabels` gives cliTools.ts the tables' labels in the UI language.
 */
import * as path from 'node:path';
import { findingText, type ToolReport } from '../commands/cliResults';
import type { ReportLabels } from '../commands/reportTables';
import { findingLabels } from '../commands/toolProblems';
import type { ExtensionPaths } from '../common/paths';
import { env, l10n, Uri, ViewColumn, type WebviewPanel, window } from '../common/vscodeapi';
import { renderPage } from './html';
import { openLocation } from './trainingPanel';

export class ResultsView {
  private panel: WebviewPanel | undefined;

  constructor(private readonly paths: ExtensionPaths) {}

  show(title: string, tool: ToolReport): void {
    // each finding's step and rank (fields) said once, in the UI language, after its message
    const labels = findingLabels();
    const findings = tool.findings.map((finding) => ({ ...finding, message: findingText(finding, labels) }));
    const data = { title, report: { ...tool, findings }, strings: resultStrings() };
    if (this.panel) {
      this.panel.title = title;
      void this.panel.webview.postMessage({ type: 'report', ...data });
      this.panel.reveal(ViewColumn.Beside, true);
      return;
    }
    const panel = window.createWebviewPanel('tensorsight.results', title, ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [Uri.file(this.paths.webview)],
    });
    const asset = (name: string) =>
      panel.webview.asWebviewUri(Uri.file(path.join(this.paths.webview, name))).toString();
    panel.webview.html = renderPage({
      title,
      cspSource: panel.webview.cspSource,
      scripts: [asset('results.js')],
      styles: [asset('webview.css')],
      lang: env.language(),
      initialData: data,
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
    this.panel?.dispose();
  }
}

/** The readable tables' labels in the UI language (reportTables.ts has the English templates). */
export function reportLabels(): ReportLabels {
  return {
    stepsProfiled: l10n.t('Steps profiled'),
    warmupSteps: l10n.t('Warm-up steps'),
    wallTime: l10n.t('Wall time'),
    timePerStep: l10n.t('Time per step'),
    timePerStepProfiled: l10n.t('Time per step under cProfile'),
    slowerValue: l10n.t('{0} ({1}× slower)'),
    note: l10n.t('Note'),
    phasesTitle: l10n.t('Time per phase'),
    phasesNote: l10n.t('Mean over {0} steps, measured under cProfile.'),
    phasesNoteUnprofiled: l10n.t(
      'Mean over {0} steps run without the profiler, as the training loop code lens measures them.',
    ),
    phase: l10n.t('Phase'),
    perStep: l10n.t('Per step'),
    share: l10n.t('Share'),
    phaseData: l10n.t('Data loading'),
    phaseForward: l10n.t('Forward'),
    phaseBackward: l10n.t('Backward'),
    phaseOptimizer: l10n.t('Optimizer step'),
    phaseOther: l10n.t('Other'),
    wholeStep: l10n.t('Whole step'),
    functionsTitle: l10n.t('Top functions'),
    functionsNote: l10n.t(
      'Times summed over the {0} profiled steps; bold rows are your code. Click a row to open its source.',
    ),
    functionsNoteSlowed: l10n.t(
      'Times summed over the {0} profiled steps, under cProfile: {1}× slower than without; bold rows are your code. Click a row to open its source.',
    ),
    function: l10n.t('Function'),
    location: l10n.t('Location'),
    ownTime: l10n.t('Own time'),
    totalTime: l10n.t('Total time'),
    calls: l10n.t('Calls'),
    linesTitle: l10n.t('Line timings of {0}'),
    line: l10n.t('Line'),
    hits: l10n.t('Hits'),
    time: l10n.t('Time'),
    perHit: l10n.t('Per hit'),
    source: l10n.t('Source'),
    model: l10n.t('Model'),
    shapeMapTitle: l10n.t('Shape map of {0}'),
    shapeMapNote: l10n.t(
      'Modules in the order the forward ran them. Click a row to open the line that called the module.',
    ),
    module: l10n.t('Module'),
    inputShapes: l10n.t('Input shapes'),
    outputShape: l10n.t('Output shape'),
    parameters: l10n.t('Parameters'),
    memory: l10n.t('Memory'),
    batchMemory: l10n.t('Memory for this batch'),
    parametersValue: l10n.t('{0} ({1} trainable)'),
    verdict: l10n.t('Verdict'),
    overfitPassed: l10n.t('Passed: the loss approached zero'),
    overfitFailed: l10n.t('Failed: the loss did not approach zero'),
    loss: l10n.t('Loss'),
    lossOnBatch: l10n.t('Loss on the batch'),
    lossChange: l10n.t('{0} → {1} (best {2})'),
    trainingSteps: l10n.t('Training steps'),
    samples: l10n.t('Samples'),
    learningRate: l10n.t('Learning rate (Adam)'),
    details: l10n.t('Details'),
    overfitWhereTitle: l10n.t('Model and loss'),
    overfitWhereNote: l10n.t('Where the script calls its model and computes its loss. Click a row to open its source.'),
    what: l10n.t('What'),
    overfitError: l10n.t('Could not run the check'),
  };
}
function resultStrings(): Record<string, string> {
  return {
    findings: l10n.t('Findings'),
    noFindings: l10n.t('No findings.'),
    summary: l10n.t('Summary'),
    sortHint: l10n.t('Click a column to sort; click a row to open its source.'),
    error: l10n.t('The script stopped with an error'),
  };
}
