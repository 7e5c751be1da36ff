/**
 * Runs an async task so that at most one run is in flight; requests that arrive during a run are folded into one
 * more run after it. The language server restart uses it: a burst of setting changes gives one restart in flight
 * and one queued, never two servers starting at once.
 */
export class SerialRunner {
  private current: Promise<void> | undefined;
  private pending = false;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Resolves once a run that started after this call has finished (a failed run is reported, not thrown). */
  request(): Promise<void> {
    if (this.current) {
      this.pending = true;
      return this.current;
    }
    this.current = this.loop();
    return this.current;
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  private async loop(): Promise<void> {
    for (;;) {
      this.pending = false;
      try {
        await this.task();
      } catch (error) {
        this.onError(error);
      }
      if (!this.pending) {
        this.current = undefined;
        return;
      }
    }
  }
}
