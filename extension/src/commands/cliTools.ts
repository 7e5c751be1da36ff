/**
 * "Run Doctor on This File", "Profile Training", "Check Shapes" and "Overfit One Batch": each runs
 * `tensorsight <tool> --json <file>` (isolated from the workspace, common/pythonLaunch.ts; only in a trusted workspace,
 * since the tool runs the script) with the resolved interpreter under a cancellable progress
 * notification, logs the tool's stderr within a budget (common/process.ts keeps only bounded tails of both streams),
 * hands findings to Problems (toolProblems.ts) and shows tables (profile rows, the shape map) in the sortable results
 * view. The doctor gets `--timeout` (`tensorsight.doctor.timeout`) and, while TensorBoard logging is on, its run's
 * `tensorboardDir`; cancelling asks the tool to stop (SIGTERM), and the doctor then reports what it found so far.
 */
import * as path from 'node:path';
import type { InterpreterService } from '../common/interpreterService';
import type { ExtensionPaths } from '../common/paths';
import { type ProcessResult, runProcess } from '../common/process';
import { toolLaunch } from '../common/pythonLaunch';
import { readSettings } from '../common/settings';
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
import { tensorBoardDirFor } from './tensorboardLogging';
import type { ToolProblems } from './toolProblems';

/** How long past its own `--timeout` the doctor gets to print its report before it is asked to stop from here. */
export const DOCTOR_REPORT_GRACE_S = 30;

/** The doctor's options from the settings: its time limit, and where this run writes TensorBoard events. */
export function doctorOptions(target: string): string[] {
  const options: string[] = [];
  const timeout = readSettings().doctorTimeout;
  if (timeout > 0) options.push('--timeout', String(timeout));
  const tensorboardDir = tensorBoardDirFor(target, undefined);
  if (tensorboardDir) options.push('--set', `tensorboardDir=${JSON.stringify(tensorboardDir)}`);
  return options;
}

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
    const toolOptions = tool === 'doctor' ? doctorOptions(target) : [];
    const launch = toolLaunch(python, this.paths, tool, target, cwd, toolEnv, path.delimiter, toolOptions);
    this.log.info(`${launch.command} ${launch.args.join(' ')}`);
    const title = this.title(tool);
    const timeout = tool === 'doctor' ? readSettings().doctorTimeout : 0;
    const result = await window.withProgress(
      { location: ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        progress.report({ message: path.basename(target) });
        const abort = new AbortController();
        token.onCancellationRequested(() => {
          progress.report({ message: l10n.t('stopping {0}…', path.basename(target)) });
          abort.abort();
        });
        return runProcess(launch.command, launch.args, {
          cwd: launch.cwd,
          env: launch.env,
          signal: abort.signal,
          timeoutMs: timeout > 0 ? (timeout + DOCTOR_REPORT_GRACE_S) * 1000 : undefined,
          onStderr: (line) => this.log.info(line),
        });
      },
    );
    if (result.stderrDropped > 0 || result.stdoutDropped > 0) {
      this.log.info(
        `${tool}: output kept to its last characters (${result.stderrDropped} of stderr and ${result.stdoutDropped} of stdout left out)`,
      );
    }
    if (isMissingSubcommand(result.stderr, tool)) {
      void window.showWarningMessage(
        l10n.t('"{0}" is not available in this version of the TensorSight Python helpers.', tool),
      );
      return undefined;
    }
    const document = parseToolOutput(result.stdout);
    if (!document) {
      this.reportNoDocument(tool, title, result);
      return undefined;
    }
    const report = readReport(document, reportLabels());
    await this.problems.publish(tool, report.findings);
    this.log.info(`${tool}: ${report.findings.length} finding(s)${report.partial ? ` (${report.partial})` : ''}`);
    if (tool === 'doctor') {
      const showProblems = l10n.t('Show Problems');
      const name = path.basename(target);
      let message =
        report.findings.length === 0
          ? l10n.t('TensorSight doctor: no finding in {0}.', name)
          : l10n.t('TensorSight doctor: {0} finding(s) in {1}.', report.findings.length, name);
      if (report.partial) message = `${message} ${report.partial}`;
      void window.showInformationMessage(message, showProblems).then((choice) => {
        if (choice === showProblems) void commands.executeCommand('workbench.actions.view.problems');
      });
    }
    if (tool !== 'doctor' || report.tables.length > 0) this.results.show(`${title}: ${path.basename(target)}`, report);
    return report.findings;
  }

  /** The tool printed no report: cancelled before it could (said in the log only), or failed (said, with the log). */
  private reportNoDocument(tool: Tool, title: string, result: ProcessResult): void {
    if (result.stopped === 'cancelled') {
      this.log.info(`${tool} cancelled`);
      return;
    }
    const how = result.signal ? `ended by ${result.signal}` : `exit status ${String(result.code)}`;
    this.log.error(`${tool} printed no report (${how}${result.stopped === 'timeout' ? ', out of time' : ''})`);
    const tail = result.stderr.trimEnd().split(/\r?\n/).slice(-20).join('\n');
    if (tail) this.log.error(`${tool}: the last lines it printed:\n${tail}`);
    const showLog = l10n.t('Show Log');
    const message = result.signal
      ? l10n.t('{0} was ended by {1} before it printed a report; see the log for details.', title, result.signal)
      : l10n.t('{0} failed; see the log for details.', title);
    void window.showErrorMessage(message, showLog).then((choice) => {
      if (choice === showLog) this.log.show();
    });
  }
}

function activePythonFile(): string | undefined {
  const editor = window.activeTextEditor();
  if (!editor || editor.document.languageId !== 'python' || editor.document.uri.scheme !== 'file') return undefined;
  if (editor.document.isDirty) void editor.document.save();
  return editor.document.uri.fsPath;
}
