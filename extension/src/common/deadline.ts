/**
 * A bounded wait: what a user waits on (F5 asking the language server for a hub, the breakpoint picker asking for
 * conditions) must end even when the other side never answers. Used by server/languageServer.ts for every custom
 * request.
 */

/**
 * The value `work` resolves to, or `undefined` when `timeoutMs` passes first; `onExpired` then runs once (to log and
 * cancel the work). A rejection of `work` before the deadline is passed on to the caller.
 */
export async function withinTime<T>(
  work: Promise<T>,
  timeoutMs: number,
  onExpired: () => void,
): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      onExpired();
      resolve(undefined);
    }, timeoutMs);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
