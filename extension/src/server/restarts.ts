/**
 * When the language server (re)starts: on request (activation, a server setting, the interpreter, the restart
 * command) and when the workspace's trust no longer matches the trust the running server was started with. An
 * untrusted server refuses `tensorsight/startSession`, so the first F5 after trusting a folder must not reach the
 * server started before the grant: `matchTrust` restarts it then, and the launch waits for that start (see
 * `LanguageServer.readyForLaunch`). Every start goes through one `SerialRunner`, so the trust-grant event and the
 * launch that caused it give one restart between them, never two (a second would close the new session's hub).
 * Pure (no editor API): the start and the trust query are injected; pinned by tests/extension/restarts.test.ts.
 */
import { SerialRunner } from '../common/serial';

export class ServerRestarts {
  private forced = false;
  private startedTrusted: boolean | undefined;
  private readonly runner: SerialRunner;

  constructor(
    private readonly start: (trusted: boolean) => Promise<void>,
    private readonly isTrusted: () => boolean,
    onError: (error: unknown) => void = () => undefined,
  ) {
    this.runner = new SerialRunner(() => this.cycle(), onError);
  }

  /** Stop the server and start it again (coalesced with a restart in flight: one more start after it). */
  restart(): Promise<void> {
    this.forced = true;
    return this.runner.request();
  }

  /**
   * Restart only if the server was started under another trust state than the workspace has now; resolves once any
   * start in flight and the one this may need are done. Nothing happens before the first start.
   */
  matchTrust(): Promise<void> {
    return this.runner.request();
  }

  /** A start is in flight or queued. */
  get busy(): boolean {
    return this.runner.busy;
  }

  private async cycle(): Promise<void> {
    const trusted = this.isTrusted();
    const trustChanged = this.startedTrusted !== undefined && this.startedTrusted !== trusted;
    if (!this.forced && !trustChanged) return;
    this.forced = false; // a restart() from now on asks for one more start after this one
    this.startedTrusted = trusted;
    await this.start(trusted);
  }
}
