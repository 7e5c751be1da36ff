/**
 * "Open TensorBoard": serves the run directory (`tensorsight.tensorboard.logDir`, default `runs/` of the workspace)
 * with the interpreter's tensorboard on 127.0.0.1 and a free port, and opens it. One server per window, stopped when
 * the extension deactivates or the command runs again with another directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { InterpreterService } from '../common/interpreterService';
import type { ExtensionPaths } from '../common/paths';
import { moduleLaunch } from '../common/pythonLaunch';
import { readSettings } from '../common/settings';
import { env, l10n, type LogOutputChannel, Uri, window, workspace } from '../common/vscodeapi';

/** The URL TensorBoard prints once it listens ("TensorBoard 2.x at http://127.0.0.1:PORT/ (Press CTRL+C to quit)"). */
export function tensorBoardUrl(output: string): string | undefined {
  return /https?:\/\/(?:127\.0\.0\.1|localhost):\d+\/?/.exec(output)?.[0];
}

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
    const folder = workspace.workspaceFolders()?.[0]?.uri.fsPath;
    const configured = readSettings().tensorboardLogDir;
    const logDir = path.isAbsolute(configured) ? configured : path.join(folder ?? process.cwd(), configured);
    if (!fs.existsSync(logDir)) {
      void window.showWarningMessage(
        l10n.t(
          'No run directory at {0}: run a training with TensorBoard logging first, or set tensorsight.tensorboard.logDir.',
          logDir,
        ),
      );
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
      let seen = '';
      const onData = (chunk: Buffer) => {
        seen += chunk.toString();
        const found = tensorBoardUrl(seen);
        if (found) resolve(found);
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => {
        this.log.info(chunk.toString().trimEnd());
        onData(chunk);
      });
      child.on('error', (error) => {
        this.log.error(`tensorboard: ${error.message}`);
        resolve(undefined);
      });
      child.on('exit', () => resolve(undefined));
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

  dispose(): void {
    this.child?.kill();
    this.child = undefined;
    this.url = undefined;
  }
}
