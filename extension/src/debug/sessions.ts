/**
 * Debug sessions that carry the TensorSight agent (our own `tensorsight` type and injected `debugpy` sessions):
 * registers each with the language server's hub before launch (`tensorsight/startSession` gives the address and
 * token the agent connects with), ends it on termination, and lets commands reach the live sessions (for example to
 * arm or disarm break-on-NaN while the program runs).
 */
import { randomUUID } from 'node:crypto';
import type { LanguageServer } from '../server/languageServer';
import { Methods, type StartSessionResult } from '../server/protocol';
import { debug, type DebugSession, type Disposable, EventEmitter, type LogOutputChannel } from '../common/vscodeapi';
import { rememberSecret } from '../common/redaction';
import type { Hub } from './launchConfig';
import { SESSION_ID_KEY } from './launchConfig';

const HUB_WAIT_MS = 15_000;

export class AgentSessions implements Disposable {
  /** Live debug sessions by VS Code session id; a run's subprocess sessions share its hub session id. */
  private readonly live = new Map<string, { session: DebugSession; hubSession: string }>();
  private readonly changeEmitter = new EventEmitter<number>();
  private readonly subscriptions: Disposable[];
  readonly onDidChange = this.changeEmitter.event;

  constructor(
    private readonly server: LanguageServer,
    private readonly log: LogOutputChannel,
  ) {
    this.subscriptions = [
      debug.onDidStartDebugSession((session) => {
        const hubSession = sessionIdOf(session);
        if (!hubSession) return;
        this.live.set(session.id, { session, hubSession });
        this.changeEmitter.fire(this.count);
      }),
      debug.onDidTerminateDebugSession((session) => {
        const entry = this.live.get(session.id);
        if (!entry) return;
        this.live.delete(session.id);
        this.changeEmitter.fire(this.count);
        // The hub session ends with the last debug session of the run (the parent outlives its workers, usually).
        const stillRunning = [...this.live.values()].some((other) => other.hubSession === entry.hubSession);
        if (!stillRunning) void this.server.request(Methods.endSession, { sessionId: entry.hubSession });
      }),
    ];
  }

  /** A new session id and, when the language server runs, the hub the agent should report to. */
  async open(): Promise<{ sessionId: string; hub?: Hub }> {
    const sessionId = randomUUID();
    // F5 right after opening VS Code, or the first F5 after trusting the folder: wait (bounded) for the server that
    // will own this run's hub, started with the workspace's trust, instead of asking one that is going away.
    await this.server.readyForLaunch(HUB_WAIT_MS);
    const hub = await this.server.request<StartSessionResult>(Methods.startSession, { sessionId });
    if (hub?.token) rememberSecret(hub.token); // hidden from every log line from now on
    if (hub?.address && hub.token) return { sessionId, hub: { address: hub.address, token: hub.token } };
    this.log.info(`session ${sessionId}: no hub (language server ${this.server.state}); the agent runs alone`);
    return { sessionId };
  }

  /** Every live debug session with the agent (subprocess sessions included: each process has its own agent). */
  sessions(): DebugSession[] {
    return [...this.live.values()].map((entry) => entry.session);
  }

  /** Number of runs (hub sessions) in progress. */
  get count(): number {
    return new Set([...this.live.values()].map((entry) => entry.hubSession)).size;
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    this.changeEmitter.dispose();
  }
}

export function sessionIdOf(session: DebugSession): string | undefined {
  const id = (session.configuration as Record<string, unknown>)[SESSION_ID_KEY];
  return typeof id === 'string' ? id : undefined;
}
