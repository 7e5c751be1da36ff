/**
 * "Run Doctor on This File", "Profile Training", "Check Shapes" and "Overfit One Batch": each runs
 * `tensorsight <tool> --json <file>` (isolated from the workspace, common/pythonLaunch.ts; only in a trusted workspace,
 * since the tool runs the script) with the resolved interpreter under a cancellable progress
 * notification, streams the tool's stderr to the output channel, hands findings to Problems (toolProblems.ts) and shows
 * tables (profile rows, the shape map) in the sortable results view.
 */
import * as path from 'node:path';
import type { InterpreterService } from '../common/interpreterService';
import type { ExtensionPaths } from '../common/paths';
import { runProcess } from '../common/process';
import { toolLaunch } from '../common/pythonLaunch';
import {
  commands,
  env,
  l10n,
  type LogOutputChannel,
  ProgressLocation,
  Uri,
  window,
  workspace,
} from '../common/vscodeapi';
import { reportLabels, type ResultsView } from '../panel/resultsView';
import { AgentEnvironment } from '../server/protocol';
import { type Finding, isMissingSubcommand, parseToolOutput, readReport } from './cliResults';
import type { ToolProblems } from './toolProblems';

export type Tool = 'doctor' | 'profile' | 'shapes' | 'overfit';

export class CliTools {
  constructor(
    private readonly paths: ExtensionPaths,
    private readonly interpreters: InterpreterService,
    private readonly problems: ToolProblems,
    private readonly results: ResultsView,
    private readonly log: LogOutputChannel,
  ) {}

  title(tool: Tool): string {
    switch (tool) {
      case 'doctor':
        return l10n.t('TensorSight doctor');
      case 'profile':
        return l10n.t('TensorSight profile');
      case 'shapes':
        return l10n.t('TensorSight shapes');
      default:
        return l10n.t('TensorSight overfit one batch');
    }
  }

  async run(tool: Tool, file?: string): Promise<Finding[] | undefined> {
    if (!workspace.isTrusted()) {
      void window.showWarningMessage(l10n.t('TensorSight does not run code in an untrusted workspace.'));
      return undefined;
    }
    const target = file ?? activePythonFile();
    if (!target) {
      void window.showInformationMessage(l10n.t('Open a Python training script first.'));
      return undefined;
    }
    const python = await this.interpreters.require();
    if (!python) return undefined;
    const cwd = workspace.getWorkspaceFolder(Uri.file(target))?.uri.fsPath ?? path.dirname(target);
    // The tool's findings and messages come back in the display language (and so do its child's, the agent's).
    const toolEnv = { ...process.env, [AgentEnvironment.locale]: env.language() };
    const launch = toolLaunch(python, this.paths, tool, target, cwd, toolEnv);
    this.log.info(`${launch.command} ${launch.args.join(' ')}`);
    const title = this.title(tool);
    const result = await window.withProgress(
      { location: ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        progress.report({ message: path.basename(target) });
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        return runProcess(launch.command, launch.args, {
          cwd: launch.cwd,
          env: launch.env,
          signal: abort.signal,
          onStderr: (text) => this.log.info(text.trimEnd()),
        });
      },
    );
    if (result.signal) {
      this.log.info(`${tool} cancelled`);
      return undefined;
    }
    if (isMissingSubcommand(result.stderr, tool)) {
      void window.showWarningMessage(
        l10n.t('"{0}" is not available in this version of the TensorSight Python helpers.', tool),
      );
      return undefined;
    }
    const document = parseToolOutput(result.stdout);
    if (!document) {
      this.log.error(`${tool} printed no report (exit status ${String(result.code)})`);
      const showLog = l10n.t('Show Log');
      void window.showErrorMessage(l10n.t('{0} failed; see the log for details.', title), showLog).then((choice) => {
        if (choice === showLog) this.log.show();
      });
      return undefined;
    }
    const report = readReport(document, reportLabels());
    await this.problems.publish(tool, report.findings);
    this.log.info(`${tool}: ${report.findings.length} finding(s)`);
    if (tool === 'doctor') {
      const showProblems = l10n.t('Show Problems');
      const message =
        report.findings.length === 0
          ? l10n.t('TensorSight doctor: no finding in {0}.', path.basename(target))
          : l10n.t('TensorSight doctor: {0} finding(s) in {1}.', report.findings.length, path.basename(target));
      void window.showInformationMessage(message, showProblems).then((choice) => {
        if (choice === showProblems) void commands.executeCommand('workbench.actions.view.problems');
      });
    }
    if (tool !== 'doctor' || report.tables.length > 0) this.results.show(`${title}: ${path.basename(target)}`, report);
    return report.findings;
  }
}

function activePythonFile(): string | undefined {
  const editor = window.activeTextEditor();
  if (!editor || editor.document.languageId !== 'python' || editor.document.uri.scheme !== 'file') return undefined;
  if (editor.document.isDirty) void editor.document.save();
  return editor.document.uri.fsPath;
}
