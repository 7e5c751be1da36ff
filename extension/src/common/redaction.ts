/**
 * Keeps secrets out of the output channel: the hub's per-session tokens travel in the `startSession` answer and in
 * the debuggee's environment (TENSORSIGHT_TOKEN), and with `tensorsight.trace.server: verbose` the language client
 * traces every message it exchanges into the channel. vscodeapi.ts wraps every channel it creates with
 * `redactingChannel`; sessions.ts remembers each token it receives, so it is hidden wherever it appears, and the
 * patterns catch a token we were never told about. Pure (no editor API) so the unit tests check it directly.
 */

export const REDACTED = '<redacted>';

const known = new Set<string>();

/** A secret to hide from now on wherever it appears (too short a value would hide ordinary text: ignored). */
export function rememberSecret(secret: string): void {
  if (secret.length >= 8) known.add(secret);
}

export function forgetSecrets(): void {
  known.clear();
}

// `"token": "…"` as JSON (also inside a JSON string, quotes escaped) and `TENSORSIGHT_TOKEN=…` / `: …` as env text.
const PATTERNS: Array<[RegExp, string]> = [
  [/("token"\s*:\s*")[^"]*(")/gi, `$1${REDACTED}$2`],
  [/(\\"token\\"\s*:\s*\\")(?:[^"\\]|\\[^"])*(\\")/gi, `$1${REDACTED}$2`],
  [/(TENSORSIGHT_TOKEN["']?\s*[=:]\s*["']?)[^\s"',}]+/g, `$1${REDACTED}`],
];

export function redactSecrets(text: string): string {
  let result = text;
  for (const secret of known) if (result.includes(secret)) result = result.split(secret).join(REDACTED);
  for (const [pattern, replacement] of PATTERNS) result = result.replace(pattern, replacement);
  return result;
}

const TEXT_METHODS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'append', 'appendLine', 'replace']);

interface TextChannel {
  appendLine(value: string): void;
}

/** The same channel, with every text written to it redacted first (the other members pass through untouched). */
export function redactingChannel<T extends TextChannel>(channel: T): T {
  return new Proxy(channel, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || !TEXT_METHODS.has(property) || typeof value !== 'function') {
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => unknown).apply(
          target,
          args.map((arg) =>
            typeof arg === 'string' ? redactSecrets(arg) : arg instanceof Error ? redactError(arg) : arg,
          ),
        );
    },
  });
}

function redactError(error: Error): Error {
  const copy = new Error(redactSecrets(error.message));
  copy.name = error.name;
  if (error.stack) copy.stack = redactSecrets(error.stack);
  return copy;
}
