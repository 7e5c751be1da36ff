/**
 * Owns the language server's lifetime: resolves the interpreter, starts the server (isolated from the workspace, see
 * common/pythonLaunch.ts) with vscode-languageclient, restarts it serially when the interpreter or a server setting
 * changes or the workspace becomes trusted (./restarts.ts), lets a launch wait until the server that will answer it
 * is up (`readyForLaunch`), and relays the custom notifications (run events, GPU, status) to the rest of the
 * extension. Called from extension.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  CancellationTokenSource,
  CloseAction,
  ErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { withinTime } from '../common/deadline';
import type { Resolution } from '../common/interpreter';
import type { ExtensionPaths } from '../common/paths';
import { SERVER_MODULE, serverLaunch } from '../common/pythonLaunch';
import { readSettings } from '../common/settings';
import { env, EventEmitter, type LogOutputChannel, workspace } from '../common/vscodeapi';
import { type GpuParams, Methods, type RunEventParams, ServerEnvironment, type StatusParams } from './protocol';
import { ServerRestarts } from './restarts';
import { runEventsOf } from './runEvents';

export type ServerState = 'starting' | 'ready' | 'failed' | 'disabled' | 'stopped';

/** How long a custom request may wait for the server's answer: each is a quick look-up a user waits on. */
export const REQUEST_TIMEOUT_MS = 10_000;

export class LanguageServer {
  private client: LanguageClient | undefined;
  private readonly restarts: ServerRestarts;
  private readonly stateEmitter = new EventEmitter<ServerState>();
  private readonly runEventEmitter = new EventEmitter<RunEventParams>();
  private readonly gpuEmitter = new EventEmitter<GpuParams>();
  private readonly statusEmitter = new EventEmitter<StatusParams>();
  private currentState: ServerState = 'stopped';
  private lastFailure = '';

  readonly onDidChangeState = this.stateEmitter.event;
  readonly onRunEvent = this.runEventEmitter.event;
  readonly onGpu = this.gpuEmitter.event;
  readonly onStatus = this.statusEmitter.event;

  constructor(
    private readonly paths: ExtensionPaths,
    private readonly log: LogOutputChannel,
    private readonly resolve: () => Promise<Resolution>,
    private readonly onStartFailure: (detail: string) => void,
  ) {
    this.restarts = new ServerRestarts(
      (trusted) => this.restartNow(trusted),
      () => workspace.isTrusted(),
      (error) => this.log.error(`language server restart failed: ${String(error)}`),
    );
  }

  get state(): ServerState {
    return this.currentState;
  }

  get failure(): string {
    return this.lastFailure;
  }

  /** Resolves once a start in progress has finished (ready or failed), or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<ServerState> {
    if (this.currentState !== 'starting' && !this.restarts.busy) return this.currentState;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        subscription.dispose();
        resolve();
      }, timeoutMs);
      const subscription = this.onDidChangeState((state) => {
        if (state === 'starting') return;
        clearTimeout(timer);
        subscription.dispose();
        resolve();
      });
    });
    return this.currentState;
  }

  /** Stops any running server and starts a new one; overlapping calls coalesce (one restart in flight). */
  restart(): Promise<void> {
    return this.restarts.restart();
  }

  /** Restarts the server if it was started before the workspace was trusted (an untrusted server has no hub). */
  matchTrust(): Promise<void> {
    return this.restarts.matchTrust();
  }

  /**
   * Before a launch asks for a hub: the server that answers must be one started with the workspace's current trust
   * (the first F5 after trusting a folder would otherwise reach the untrusted server, or one being replaced), and
   * done starting. Bounded by `timeoutMs`; the state it settled in.
   */
  async readyForLaunch(timeoutMs: number): Promise<ServerState> {
    const deadline = Date.now() + timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    try {
      await Promise.race([this.matchTrust(), expired]);
    } finally {
      clearTimeout(timer);
    }
    return this.settled(Math.max(0, deadline - Date.now()));
  }

  /**
   * Sends a custom request; undefined when the server is not running, the request fails, or no answer came within
   * `timeoutMs` (logged, and the request cancelled). Every custom request is one a user waits on (F5, the breakpoint
   * picker), so none may hang on a server that is busy, restarting or stuck.
   */
  async request<R>(method: string, params: unknown, timeoutMs = REQUEST_TIMEOUT_MS): Promise<R | undefined> {
    const client = this.client;
    if (!client || client.state !== State.Running) return undefined;
    const cancel = new CancellationTokenSource();
    const giveUp = () => {
      this.log.warn(`${method}: no answer from the language server within ${timeoutMs} ms; going on without it`);
      cancel.cancel();
    };
    try {
      return await withinTime(client.sendRequest<R>(method, params, cancel.token), timeoutMs, giveUp);
    } catch (error) {
      if (!cancel.token.isCancellationRequested) this.log.warn(`${method} failed: ${String(error)}`);
      return undefined;
    } finally {
      cancel.dispose();
    }
  }

  async dispose(): Promise<void> {
    await this.stopClient();
    this.stateEmitter.dispose();
    this.runEventEmitter.dispose();
    this.gpuEmitter.dispose();
    this.statusEmitter.dispose();
  }

  private setState(state: ServerState): void {
    this.currentState = state;
    this.stateEmitter.fire(state);
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      if (client.isRunning()) await client.stop(5000);
      else await client.dispose(2000);
    } catch (error) {
      this.log.warn(`stopping the language server: ${String(error)}`);
    }
  }

  private async restartNow(trusted: boolean): Promise<void> {
    await this.stopClient();
    if (!readSettings().serverEnabled) {
      this.log.info('language server disabled by tensorsight.server.enabled');
      this.setState('disabled');
      return;
    }
    this.setState('starting');
    const resolution = await this.resolve();
    if (!resolution.ok) {
      this.lastFailure = resolution.detail;
      this.setState('failed');
      return; // the caller already told the user how to fix the interpreter
    }
    if (!fs.existsSync(path.join(this.paths.pyhelpers, ...SERVER_MODULE.split('.')))) {
      // A build without the server package: say so once in the log and the status bar, no error pop-ups.
      this.lastFailure = `${SERVER_MODULE} is not in ${this.paths.pyhelpers}`;
      this.log.error(`language server not started: ${this.lastFailure}`);
      this.setState('failed');
      return;
    }
    // The server's words (diagnostics, code lenses, hovers) follow the display language: the initialize request's
    // locale says it, and the environment too, for what the server says before that.
    const launch = serverLaunch(resolution.command, this.paths, {
      ...process.env,
      [ServerEnvironment.locale]: env.language(),
    });
    this.log.info(`starting language server: ${launch.command} ${launch.args.join(' ')} (${resolution.source})`);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      transport: TransportKind.stdio,
      options: { env: launch.env, cwd: launch.cwd },
    };
    let exitedEarly = false;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file', language: 'python' }],
      // The log redacts secrets (extension.ts): with `tensorsight.trace.server: verbose` the client traces every
      // message there, the startSession answer (the hub's token) included.
      outputChannel: this.log,
      connectionOptions: { maxRestartCount: 0 },
      initializationOptions: { trusted },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          exitedEarly = true;
          if (this.currentState === 'ready') {
            this.lastFailure = 'the language server exited';
            this.setState('failed');
            this.onStartFailure(this.lastFailure);
          }
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      initializationFailedHandler: () => false,
    };
    const client = new LanguageClient('tensorsight', 'TensorSight', serverOptions, clientOptions);
    client.onNotification(Methods.runEvent, (batch: unknown) => {
      for (const params of runEventsOf(batch)) this.runEventEmitter.fire(params);
    });
    client.onNotification(Methods.gpu, (params: GpuParams) => this.gpuEmitter.fire(params));
    client.onNotification(Methods.status, (params: StatusParams) => this.statusEmitter.fire(params));
    this.client = client;
    try {
      await client.start();
      this.log.info('language server ready');
      this.setState('ready');
    } catch (error) {
      this.lastFailure = exitedEarly ? 'the server process exited during start-up (see the log)' : String(error);
      this.log.error(`language server failed to start: ${this.lastFailure}`);
      await this.stopClient();
      this.setState('failed');
      this.onStartFailure(this.lastFailure);
    }
  }
}
