/**
 * Deleting the claims this process made when it is stopped with SIGINT (Ctrl-C) or SIGTERM, so an
 * agent that is interrupted leaves nothing behind. Claims are registered when made and dropped on
 * close() or disconnect(). On the first signal the handlers delete every registered claim (bounded
 * in time), then, when no other code listens for that signal, re-raise it so the process ends as it
 * would have. A process killed with SIGKILL cannot clean up: the claim's `ttl` is the backstop.
 */

export interface CleanupEntry {
  /** Deletes the claim; must not throw. */
  readonly remove: () => Promise<void>;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
/** Longest time the handlers spend deleting claims before the signal takes its course. */
const CLEANUP_BUDGET_MS = 5_000;

const entries = new Set<CleanupEntry>();
let installed = false;
let running: Promise<void> | undefined;

/** Registers a claim for deletion on SIGINT/SIGTERM; returns the function that unregisters it. */
export function registerForCleanup(entry: CleanupEntry): () => void {
  entries.add(entry);
  install();
  return () => {
    entries.delete(entry);
  };
}

/** How many claims would be deleted on a signal now. */
export function pendingCleanups(): number {
  return entries.size;
}

function install(): void {
  if (installed) return;
  installed = true;
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function onSignal(signal: NodeJS.Signals): void {
  running ??= cleanUp().finally(() => {
    for (const s of SIGNALS) process.off(s, onSignal);
    installed = false;
    // Someone else handles the signal: leave the decision to them. Otherwise end as the signal would.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}

async function cleanUp(): Promise<void> {
  const all = [...entries];
  entries.clear();
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLEANUP_BUDGET_MS)));
  await Promise.race([Promise.allSettled(all.map((e) => e.remove())), budget]);
  clearTimeout(timer);
}
