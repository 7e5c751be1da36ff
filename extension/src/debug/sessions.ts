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
import type { Hub } from './launchConfig';
import { SESSION_ID_KEY } from './launchConfig';

const HUB_WAIT_MS = 15_000;

export class AgentSessions implements Disposable {
  private readonly live = new Map<string, DebugSession>();
  private readonly changeEmitter = new EventEmitter<number>();
  private readonly subscriptions: Disposable[];
  readonly onDidChange = this.changeEmitter.event;

  constructor(
    private readonly server: LanguageServer,
    private readonly log: LogOutputChannel,
  ) {
    this.subscriptions = [
      debug.onDidStartDebugSession((session) => {
        const id = sessionIdOf(session);
        if (!id) return;
        this.live.set(id, session);
        this.changeEmitter.fire(this.live.size);
      }),
      debug.onDidTerminateDebugSession((session) => {
        const id = sessionIdOf(session);
        if (!id) return;
        this.live.delete(id);
        this.changeEmitter.fire(this.live.size);
        void this.server.request(Methods.endSession, { sessionId: id });
      }),
    ];
  }

  /** A new session id and, when the language server runs, the hub the agent should report to. */
  async open(): Promise<{ sessionId: string; hub?: Hub }> {
    const sessionId = randomUUID();
    await this.server.settled(HUB_WAIT_MS); // F5 right after opening VS Code: let a starting server come up
    const hub = await this.server.request<StartSessionResult>(Methods.startSession, { sessionId });
    if (hub?.address && hub.token) return { sessionId, hub: { address: hub.address, token: hub.token } };
    this.log.info(`session ${sessionId}: no hub (language server ${this.server.state}); the agent runs alone`);
    return { sessionId };
  }

  sessions(): DebugSession[] {
    return [...this.live.values()];
  }

  get count(): number {
    return this.live.size;
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
