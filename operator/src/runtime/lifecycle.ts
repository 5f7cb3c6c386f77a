/**
 * A long-running command's life from start-up to exit, shared by `controller` and `router`.
 * Signal handlers go in first, so a SIGTERM during start-up still shuts down in order; the first
 * signal runs the command's shutdown steps once, a second one exits 1 at once.
 */
import type { Logger } from './log';

export class ProcessLifecycle {
  /** Resolves with the process exit code. */
  public readonly exited: Promise<number>;
  private stopping = false;
  private resolveExit!: (code: number) => void;
  private steps?: () => Promise<void>;

  public constructor(private readonly log: Logger, signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']) {
    this.exited = new Promise<number>((resolve) => (this.resolveExit = resolve));
    for (const signal of signals) process.on(signal, () => void this.shutDown(signal));
  }

  /** Whether a shutdown has begun (readiness should fail from then on). */
  public get shuttingDown(): boolean {
    return this.stopping;
  }

  /** What a signal runs, in order; until set, a signal exits 0 at once. */
  public onShutdown(steps: () => Promise<void>): void {
    this.steps = steps;
  }

  /** Begin the shutdown as a first signal would (`why` is logged); nothing if one has begun. */
  public requestShutdown(why: string): void {
    if (!this.stopping) void this.shutDown(why);
  }

  public exit(code: number): void {
    this.resolveExit(code);
  }

  private async shutDown(signal: string): Promise<void> {
    if (this.stopping) {
      this.log.warn({ signal }, 'second signal; exiting at once');
      this.exit(1);
      return;
    }
    this.stopping = true;
    if (!this.steps) {
      this.exit(0);
      return;
    }
    this.log.info({ signal }, 'shutting down');
    await this.steps();
    this.log.info('shutdown complete');
    this.exit(0);
  }
}
