/**
 * Resolves the interpreter once (cached until a relevant setting or workspace trust changes) and tells the user,
 * once per distinct problem, how to fix a missing or broken Python: a notification with an action.
 */
import { type InterpreterProvider, type Resolution, resolveInterpreter } from './interpreter';
import { commands, l10n, type LogOutputChannel, window, workspace } from './vscodeapi';

export class InterpreterService {
  private cached: Promise<Resolution> | undefined;
  private lastReported = '';

  constructor(
    private readonly provider: InterpreterProvider,
    private readonly log: LogOutputChannel,
  ) {}

  invalidate(): void {
    this.cached = undefined;
  }

  resolve(): Promise<Resolution> {
    this.cached ??= resolveInterpreter(this.provider, workspace.isTrusted()).then((resolution) => {
      if (resolution.ok) {
        this.log.info(`python: ${resolution.command} (${resolution.source}, ${resolution.version ?? '?'})`);
        this.lastReported = '';
      } else {
        this.log.error(`python: ${resolution.problem}: ${resolution.command ?? ''} ${resolution.detail}`);
        this.report(resolution);
      }
      return resolution;
    });
    return this.cached;
  }

  /** The interpreter command, or undefined after telling the user what is wrong. */
  async require(): Promise<string | undefined> {
    const resolution = await this.resolve();
    if (resolution.ok) return resolution.command;
    this.lastReported = '';
    this.report(resolution);
    return undefined;
  }

  private report(resolution: Exclude<Resolution, { ok: true }>): void {
    const key = `${resolution.problem}:${resolution.command ?? ''}:${resolution.detail}`;
    if (key === this.lastReported) return;
    this.lastReported = key;
    const openSettings = l10n.t('Open Settings');
    const showLog = l10n.t('Show Log');
    const install = l10n.t('Install debugpy');
    let message: string;
    const actions = [openSettings, showLog];
    switch (resolution.problem) {
      case 'settingBroken':
        message = l10n.t(
          'TensorSight: the interpreter set in tensorsight.python ({0}) does not work: {1}',
          resolution.command ?? '',
          resolution.detail,
        );
        break;
      case 'tooOld':
        message = l10n.t(
          'TensorSight needs Python 3.10 or newer; {0} is {1}.',
          resolution.command ?? '',
          resolution.detail,
        );
        break;
      case 'missingModules':
        message = l10n.t(
          'TensorSight: {0} cannot import {1}, which debugging needs.',
          resolution.command ?? '',
          resolution.detail,
        );
        if (workspace.isTrusted()) actions.unshift(install);
        break;
      default:
        message = l10n.t(
          'TensorSight found no working Python 3.10+ ({0}). Set tensorsight.python or install Python.',
          resolution.detail,
        );
    }
    void window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === openSettings) void commands.executeCommand('workbench.action.openSettings', 'tensorsight.python');
      else if (choice === showLog) this.log.show();
      else if (choice === install && resolution.command) {
        const terminal = window.createTerminal('TensorSight');
        terminal.show();
        terminal.sendText(`"${resolution.command}" -m pip install ${resolution.detail.split(', ').join(' ')}`);
      }
    });
  }
}
