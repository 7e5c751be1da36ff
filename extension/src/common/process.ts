/**
 * Runs a child process and collects its output; used for the interpreter probe and the CLI tools (doctor, profile,
 * shapes, overfit), and its output helpers by TensorBoard. Plain Node, no editor API, so the unit tests run it against
 * real processes.
 *
 * Bounded whatever the program prints: only the tail of each stream is kept (`maxStdoutChars`, `maxStderrChars`), and
 * stderr reaches `onStderr` as whole lines, each cut at `MAX_LOG_LINE_CHARS`, through a character budget
 * (`LogThrottle`): a script that prints a gigabyte costs the extension host a few megabytes and the log a few hundred
 * kilobytes, with a line saying how much was left out and the last lines kept. Cancelling (`signal`) or running past
 * `timeoutMs` asks the program to stop (SIGTERM: the tools then print the report of what ran so far) and ends it
 * (SIGKILL) `graceMs` later if it is still there.
 */
import { spawn } from 'node:child_process';

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The tail of stdout (at most `maxStdoutChars`); `stdoutDropped` characters before it were left out. */
  stdout: string;
  stderr: string;
  stdoutDropped: number;
  stderrDropped: number;
  /** The run was cancelled (`signal` aborted) or ran past `timeoutMs`: it was asked to stop. */
  stopped?: 'cancelled' | 'timeout';
  /** Set when the program could not be started at all (e.g. ENOENT). */
  spawnError?: string;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with stderr's lines as they arrive (the tools print progress there), within a budget (`LogThrottle`). */
  onStderr?: (line: string) => void;
  /** Aborting asks the process to stop (SIGTERM), then kills it after `graceMs` (a cancelled progress notification). */
  signal?: AbortSignal;
  /** The same as aborting, after this many milliseconds. */
  timeoutMs?: number;
  /** How long a process asked to stop gets before SIGKILL (default `STOP_GRACE_MS`). */
  graceMs?: number;
  maxStdoutChars?: number;
  maxStderrChars?: number;
  /** The log budget of `onStderr` (default: `LOG_BURST_CHARS`, then `LOG_CHARS_PER_SECOND`). */
  logBudget?: LogBudget;
}

/** Stdout carries the tools' one JSON document (a profile of a large program: a few MB); it is printed last. */
export const MAX_STDOUT_CHARS = 16 * 1024 * 1024;
/** Stderr is the program's own output: its end (a traceback) is what a failure report needs. */
export const MAX_STDERR_CHARS = 256 * 1024;
export const STOP_GRACE_MS = 8_000;
export const MAX_LOG_LINE_CHARS = 2_000;
export const LOG_BURST_CHARS = 200_000;
export const LOG_CHARS_PER_SECOND = 20_000;
/** Lines kept while the budget is spent, logged at the end so the output's last lines are always seen. */
export const LOG_LAST_LINES = 30;

export interface LogBudget {
  burstChars: number;
  charsPerSecond: number;
}

export function runProcess(command: string, args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const stdout = new TailBuffer(options.maxStdoutChars ?? MAX_STDOUT_CHARS);
    const stderr = new TailBuffer(options.maxStderrChars ?? MAX_STDERR_CHARS);
    const log = options.onStderr ? new LogThrottle(options.onStderr, options.logBudget) : undefined;
    let stopped: ProcessResult['stopped'];
    let settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let killer: ReturnType<typeof setTimeout> | undefined;
    const output = () => ({
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdoutDropped: stdout.dropped,
      stderrDropped: stderr.dropped,
    });
    const finish = (result: ProcessResult) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      if (killer) clearTimeout(killer);
      options.signal?.removeEventListener('abort', onAbort);
      log?.end();
      resolve(stopped ? { ...result, stopped } : result);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command, [...args], {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      finish({ code: null, signal: null, ...output(), spawnError: (error as Error).message });
      return;
    }
    const stop = (why: 'cancelled' | 'timeout') => {
      if (stopped || settled) return;
      stopped = why;
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), options.graceMs ?? STOP_GRACE_MS);
    };
    function onAbort() {
      stop('cancelled');
    }
    if (options.signal?.aborted) stop('cancelled');
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs) timer = setTimeout(() => stop('timeout'), options.timeoutMs);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => stdout.push(chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr.push(chunk);
      log?.push(chunk);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      finish({ code: null, signal: null, ...output(), spawnError: error.message });
    });
    child.on('close', (code, signal) => finish({ code, signal, ...output() }));
  });
}

/** The last `limit` characters of a stream, however much goes through; `dropped` counts what was left out. */
export class TailBuffer {
  private chunks: string[] = [];
  private kept = 0;
  private seen = 0;

  constructor(readonly limit: number) {}

  push(chunk: string): void {
    this.seen += chunk.length;
    const piece = chunk.length > this.limit ? chunk.slice(chunk.length - this.limit) : chunk;
    this.chunks.push(piece);
    this.kept += piece.length;
    for (let first = this.chunks[0]; first && this.chunks.length > 1; first = this.chunks[0]) {
      if (this.kept - first.length < this.limit) break;
      this.chunks.shift();
      this.kept -= first.length;
    }
  }

  get dropped(): number {
    return this.seen - Math.min(this.kept, this.limit);
  }

  text(): string {
    const joined = this.chunks.join('');
    return joined.length > this.limit ? joined.slice(joined.length - this.limit) : joined;
  }
}

/**
 * Passes a stream's lines to `write` within a character budget (a burst, then a steady rate), each line cut at
 * `MAX_LOG_LINE_CHARS`. What does not fit is counted and said in one line when logging resumes or the stream ends;
 * the last `LOG_LAST_LINES` lines left out are logged at the end.
 */
export class LogThrottle {
  private pending = '';
  private pendingCut = false;
  private tokens: number;
  private last: number;
  private skippedLines = 0;
  private skippedChars = 0;
  private lastSkipped: string[] = [];
  private readonly budget: LogBudget;

  constructor(
    private readonly write: (line: string) => void,
    budget?: LogBudget,
    private readonly now: () => number = Date.now,
  ) {
    this.budget = budget ?? { burstChars: LOG_BURST_CHARS, charsPerSecond: LOG_CHARS_PER_SECOND };
    this.tokens = this.budget.burstChars;
    this.last = this.now();
  }

  push(chunk: string): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      const piece = chunk.slice(start, newline < 0 ? chunk.length : newline);
      this.append(piece);
      if (newline < 0) return;
      this.line(this.take());
      start = newline + 1;
    }
  }

  /** The stream ended: its last partial line, then what was left out. */
  end(): void {
    if (this.pending.length > 0 || this.pendingCut) this.line(this.take());
    this.reportSkipped(true);
  }

  private append(piece: string): void {
    if (this.pendingCut) return;
    const room = MAX_LOG_LINE_CHARS - this.pending.length;
    if (piece.length <= room) {
      this.pending += piece;
    } else {
      this.pending += piece.slice(0, room);
      this.pendingCut = true;
    }
  }

  private take(): string {
    const text = this.pending.replace(/\r$/, '') + (this.pendingCut ? ' …' : '');
    this.pending = '';
    this.pendingCut = false;
    return text;
  }

  private line(text: string): void {
    const time = this.now();
    this.tokens = Math.min(
      this.budget.burstChars,
      this.tokens + ((time - this.last) / 1000) * this.budget.charsPerSecond,
    );
    this.last = time;
    const cost = text.length + 1;
    if (this.tokens < cost) {
      this.skippedLines += 1;
      this.skippedChars += cost;
      this.lastSkipped.push(text);
      if (this.lastSkipped.length > LOG_LAST_LINES) this.lastSkipped.shift();
      return;
    }
    this.reportSkipped(false);
    this.tokens -= cost;
    this.write(text);
  }

  private reportSkipped(atEnd: boolean): void {
    if (this.skippedLines === 0) return;
    const shown = atEnd ? this.lastSkipped : [];
    const left = this.skippedLines - shown.length;
    const chars = this.skippedChars - shown.reduce((sum, text) => sum + text.length + 1, 0);
    if (left > 0) this.write(`… ${left} line(s) of output (${chars} characters) not logged …`);
    for (const text of shown) this.write(text);
    this.skippedLines = 0;
    this.skippedChars = 0;
    this.lastSkipped = [];
  }
}

/** Prepends `entries` to a PATH-like variable, keeping what was there (empty parts dropped). */
export function prependPath(existing: string | undefined, entries: readonly string[], separator: string): string {
  return [...entries, ...(existing ? existing.split(separator) : [])].filter((part) => part.length > 0).join(separator);
}
