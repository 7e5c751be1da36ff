/**
 * "Open TensorBoard": serves the run directory (`tensorsight.tensorboard.logDir`, default `runs/` of the workspace)
 * with the interpreter's tensorboard on 127.0.0.1 and a free port, and opens it. One server per window, stopped when
 * the extension deactivates or the command runs again with another directory. A directory without any event file is
 * not served: the user is offered what works instead, turning on TensorBoard logging for the next runs
 * (`tensorsight.tensorboard.logRuns`, tensorboardLogging.ts) or choosing a folder that has runs. TensorBoard's output
 * is read through a bounded tail and logged within a budget (common/process.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { InterpreterService } from '../common/interpreterService';
import type { ExtensionPaths } from '../common/paths';
import { LogThrottle, TailBuffer } from '../common/process';
import { moduleLaunch } from '../common/pythonLaunch';
import { readSettings, SECTION } from '../common/settings';
import { ConfigurationTarget, env, l10n, type LogOutputChannel, Uri, window, workspace } from '../common/vscodeapi';
import { hasEventFiles, tensorBoardRoot } from './tensorboardLogging';

/** The URL TensorBoard prints once it listens ("TensorBoard 2.x at http://127.0.0.1:PORT/ (Press CTRL+C to quit)"). */
export function tensorBoardUrl(output: string): string | undefined {
  return /https?:\/\/(?:127\.0\.0\.1|localhost):\d+\/?/.exec(output)?.[0];
}

/** How much of TensorBoard's output is searched for its URL (it prints it within its first lines). */
const URL_SEARCH_CHARS = 16 * 1024;

export class TensorBoard {
  private child: ChildProcess | undefined;
  private logDir: string | undefined;
  private url: string | undefined;

  constructor(
    private readonly paths: ExtensionPaths,
    private readonly interpreters: InterpreterService,
    private readonly log: LogOutputChannel,
  ) {}

  async open(): Promise<void> {
    if (!workspace.isTrusted()) {
      void window.showWarningMessage(l10n.t('TensorSight does not run code in an untrusted workspace.'));
      return;
    }
    const logDir = tensorBoardRoot();
    if (!hasEventFiles(logDir)) {
      await this.offerWhatWorks(logDir);
      return;
    }
    if (this.child && this.logDir === logDir && this.url) {
      void env.openExternal(Uri.parse(this.url));
      return;
    }
    this.dispose();
    const python = await this.interpreters.require();
    if (!python) return;
    const args = ['--logdir', logDir, '--host', '127.0.0.1', '--port', '0'];
    const launch = moduleLaunch(python, this.paths, 'tensorboard.main', args, process.env);
    this.log.info(`${launch.command} ${launch.args.join(' ')}`);
    const child = spawn(launch.command, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.logDir = logDir;
    const url = await new Promise<string | undefined>((resolve) => {
      const seen = new TailBuffer(URL_SEARCH_CHARS);
      const log = new LogThrottle((line) => this.log.info(line));
      const onData = (chunk: Buffer) => {
        seen.push(chunk.toString());
        const found = tensorBoardUrl(seen.text());
        if (found) resolve(found);
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => {
        log.push(chunk.toString());
        onData(chunk);
      });
      child.on('error', (error) => {
        this.log.error(`tensorboard: ${error.message}`);
        resolve(undefined);
      });
      child.on('exit', () => {
        log.end();
        resolve(undefined);
      });
      setTimeout(() => resolve(undefined), 60_000);
    });
    if (!url) {
      this.dispose();
      void window.showErrorMessage(
        l10n.t('TensorBoard did not start. Is it installed in {0}? ({0} -m pip install tensorboard)', python),
      );
      return;
    }
    this.url = url;
    void env.openExternal(Uri.parse(url));
  }

  /**
   * No event file under `logDir`: say so, and offer to turn on logging for the next runs (when it is off) or to choose
   * a folder that has runs (then served, or asked about again).
   */
  private async offerWhatWorks(logDir: string): Promise<void> {
    const logging = readSettings().tensorboardLogRuns;
    const turnOn = l10n.t('Turn On TensorBoard Logging');
    const choose = l10n.t('Choose Folder…');
    const message = logging
      ? l10n.t(
          'No TensorBoard event files under {0} yet: the next Debug Training or Run Doctor writes them there. Run one, or choose a folder that has runs.',
          logDir,
        )
      : l10n.t(
          'No TensorBoard event files under {0}. Turn on TensorBoard logging and the next Debug Training or Run Doctor writes them there, or choose a folder that has runs.',
          logDir,
        );
    const choice = await window.showWarningMessage(message, ...(logging ? [choose] : [turnOn, choose]));
    if (choice === turnOn) {
      await workspace.getConfiguration(SECTION).update('tensorboard.logRuns', true, settingsTarget());
      this.log.info(`TensorBoard logging turned on: runs write under ${logDir}`);
      void window.showInformationMessage(
        l10n.t(
          'TensorBoard logging is on: each Debug Training and Run Doctor writes its events to a folder under {0}. Open TensorBoard again once a run has started.',
          logDir,
        ),
      );
    } else if (choice === choose) {
      const picked = await window.showOpenDialog({
        canSelectFolders: true,
        canSelectFiles: false,
        canSelectMany: false,
        defaultUri: Uri.file(logDir),
        openLabel: l10n.t('Serve with TensorBoard'),
      });
      const folder = picked?.[0]?.fsPath;
      if (!folder) return;
      await workspace.getConfiguration(SECTION).update('tensorboard.logDir', folder, settingsTarget());
      await this.open();
    }
  }

  dispose(): void {
    this.child?.kill();
    this.child = undefined;
    this.url = undefined;
  }
}

/** The workspace's settings when a folder is open (the run directory belongs to the project), else the user's. */
function settingsTarget() {
  return workspace.workspaceFolders()?.length ? ConfigurationTarget.Workspace : ConfigurationTarget.Global;
}
