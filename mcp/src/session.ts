/**
 * One MCP session's sandbox: claimed when a tool first needs it (or by create_sandbox), released by
 * delete_sandbox, when the session closes, or after `idleTimeoutMs` without a tool call (counted
 * from the session's start until its first call); and the
 * session's limit on tool calls running at once.
 */
import type { SandboxHandle } from '@cdk8s-agent-sandbox/sdk';
import { SandboxError } from '@cdk8s-agent-sandbox/sdk';

export interface SessionOptions {
  /** Claims a sandbox (`ttl` undefined: the server's default); the claim is deleted when `signal` aborts while it waits. */
  readonly claim: (ttl: string | undefined, signal: AbortSignal) => Promise<SandboxHandle>;
  /** 0: never. */
  readonly idleTimeoutMs: number;
  readonly maxConcurrentCalls: number;
  /** Called after an idle release (HTTP ends the whole session then). */
  readonly onIdle?: () => void;
  readonly log: (message: string) => void;
}

/** A tool call over the session's limit. */
export class SessionBusyError extends SandboxError {
  public override readonly name = 'SessionBusyError';
}

/** The session is closed: no sandbox is claimed for it any more. */
export class SessionClosedError extends SandboxError {
  public override readonly name = 'SessionClosedError';
}

export class SandboxSession {
  private pending?: Promise<SandboxHandle>;
  private current?: SandboxHandle;
  private claiming?: AbortController;
  private active = 0;
  private idleTimer?: NodeJS.Timeout;
  private closed = false;
  private readonly releaseListeners: Array<(claim: string, why: string) => void> = [];
  private readonly claimListeners = new Set<() => void>();

  public constructor(private readonly options: SessionOptions) {
    // The idle clock runs from the start: a session that never calls a tool expires too.
    this.armIdle();
  }

  /** The sandbox, once claimed (undefined before the first claim and after a release). */
  public get sandbox(): SandboxHandle | undefined {
    return this.current;
  }

  /** Tool calls running now. */
  public get activeCalls(): number {
    return this.active;
  }

  /** The session's sandbox, claimed now when it has none (with the default ttl, or `ttl`). */
  public acquire(ttl?: string): Promise<SandboxHandle> {
    if (this.closed) return Promise.reject(new SessionClosedError('this MCP session is closed'));
    if (this.pending) return this.pending;
    const controller = new AbortController();
    this.claiming = controller;
    for (const listener of this.claimListeners) listener();
    const pending = this.options.claim(ttl, controller.signal).then((sandbox) => {
      if (this.pending === pending) {
        this.current = sandbox;
        this.options.log(`claimed sandbox ${sandbox.name} (claim ${sandbox.claim}, namespace ${sandbox.namespace})`);
      }
      return sandbox;
    }, (err) => {
      // A failed claim is not kept: the next call tries again.
      if (this.pending === pending) this.pending = undefined;
      throw err;
    }).finally(() => {
      if (this.claiming === controller) this.claiming = undefined;
    });
    this.pending = pending;
    return pending;
  }

  /** Whether a sandbox is claimed or being claimed. */
  public get hasSandbox(): boolean {
    return this.pending !== undefined;
  }

  /**
   * Releases the sandbox (deletes its claim); a claim still waiting is stopped and deleted.
   * Resolves with the released claim's name, or undefined when there was none.
   */
  public async release(why: string): Promise<string | undefined> {
    const pending = this.pending;
    if (!pending) return undefined;
    this.pending = undefined;
    this.current = undefined;
    this.claiming?.abort(new SessionClosedError(`the sandbox was released (${why}) while it was being claimed`));
    let sandbox: SandboxHandle;
    try {
      sandbox = await pending;
    } catch {
      return undefined; // the SDK deleted the claim when the wait stopped
    }
    await sandbox.close();
    this.options.log(`released sandbox ${sandbox.name} (claim ${sandbox.claim} deleted): ${why}`);
    for (const listener of this.releaseListeners) listener(sandbox.claim, why);
    return sandbox.claim;
  }

  /** Calls `listener` when a claim starts, until the returned function is called. */
  public onClaimStart(listener: () => void): () => void {
    this.claimListeners.add(listener);
    return () => this.claimListeners.delete(listener);
  }

  /** Calls `listener` after each release. */
  public onRelease(listener: (claim: string, why: string) => void): void {
    this.releaseListeners.push(listener);
  }

  /** Runs a tool call within the session's limit, and restarts the idle clock when the last one ends. */
  public async call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw new SessionClosedError('this MCP session is closed');
    if (this.active >= this.options.maxConcurrentCalls) {
      throw new SessionBusyError(`this session already runs ${this.active} tool calls, its limit (--max-concurrent-calls); call again when one has finished`);
    }
    this.active++;
    clearTimeout(this.idleTimer);
    try {
      return await fn();
    } finally {
      this.active--;
      if (this.active === 0) this.armIdle();
    }
  }

  /** Releases the sandbox and refuses further calls. */
  public async close(why: string): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    await this.release(why);
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.options.idleTimeoutMs <= 0 || this.closed) return;
    this.idleTimer = setTimeout(() => {
      if (this.active > 0) return;
      const minutes = this.options.idleTimeoutMs / 60_000;
      const why = `no tool call for ${minutes >= 1 ? `${Math.round(minutes * 10) / 10} min` : `${this.options.idleTimeoutMs / 1000} s`}`;
      this.release(why).catch((err) => this.options.log(`could not release the idle sandbox: ${(err as Error).message}`))
        .finally(() => this.options.onIdle?.());
    }, this.options.idleTimeoutMs);
    this.idleTimer.unref();
  }
}
