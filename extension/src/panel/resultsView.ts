/**
 * The results view (webview) of the CLI tools: a summary, the findings, and every table of the report (profile rows,
 * the shape map) sortable by any column, with a click on a row opening its source line. One panel, reused.
 */
import * as path from 'node:path';
import type { ToolReport } from '../commands/cliResults';
import type { ExtensionPaths } from '../common/paths';
import { env, l10n, Uri, ViewColumn, type WebviewPanel, window } from '../common/vscodeapi';
import { renderPage } from './html';
import { openLocation } from './trainingPanel';

export class ResultsView {
  private panel: WebviewPanel | undefined;

  constructor(private readonly paths: ExtensionPaths) {}

  show(title: string, report: ToolReport): void {
    const data = { title, report, strings: resultStrings() };
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

function resultStrings(): Record<string, string> {
  return {
    findings: l10n.t('Findings'),
    noFindings: l10n.t('No findings.'),
    summary: l10n.t('Summary'),
    sortHint: l10n.t('Click a column to sort; click a row to open its source.'),
    error: l10n.t('The script stopped with an error'),
  };
}
