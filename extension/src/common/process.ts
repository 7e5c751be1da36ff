/**
 * Runs a child process and collects its output; used for the interpreter probe and the CLI tools (doctor, profile,
 * shapes, overfit, TensorBoard). Plain Node, no editor API, so the unit tests run it against real processes.
 */
import { spawn } from 'node:child_process';

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Set when the program could not be started at all (e.g. ENOENT). */
  spawnError?: string;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with each chunk of stderr as it arrives (the tools print progress there). */
  onStderr?: (text: string) => void;
  /** Aborting kills the process (a cancelled progress notification). */
  signal?: AbortSignal;
  timeoutMs?: number;
}

export function runProcess(command: string, args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let settled = false;
    const finish = (result: ProcessResult) => {
      if (!settled) {
        settled = true;
        if (timer) clearTimeout(timer);
        resolve(result);
      }
    };
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      signal: options.signal,
    });
    const timer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : undefined;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      options.onStderr?.(chunk);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.name === 'AbortError') return; // reported by 'close' with the kill signal
      finish({ code: null, signal: null, stdout, stderr, spawnError: error.message });
    });
    child.on('close', (code, signal) => finish({ code, signal, stdout, stderr }));
  });
}

/** Prepends `entries` to a PATH-like variable, keeping what was there (empty parts dropped). */
export function prependPath(existing: string | undefined, entries: readonly string[], separator: string): string {
  return [...entries, ...(existing ? existing.split(separator) : [])].filter((part) => part.length > 0).join(separator);
}
