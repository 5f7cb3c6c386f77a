import { ProcessLifecycle } from '../../src/runtime/lifecycle';
import { SILENT_LOGGER } from '../../src/runtime/log';

// process.emit calls the handlers without sending a real signal.
const SIGNAL = 'SIGUSR2';
afterEach(() => process.removeAllListeners(SIGNAL));

test('a signal before any shutdown steps exits 0 at once', async () => {
  const life = new ProcessLifecycle(SILENT_LOGGER, [SIGNAL]);
  process.emit(SIGNAL, SIGNAL);
  await expect(life.exited).resolves.toBe(0);
  expect(life.shuttingDown).toBe(true);
});

test('the first signal runs the steps once and exits 0; a second one during them exits 1', async () => {
  const life = new ProcessLifecycle(SILENT_LOGGER, [SIGNAL]);
  let runs = 0;
  let finish!: () => void;
  life.onShutdown(() => {
    runs++;
    return new Promise<void>((resolve) => (finish = resolve));
  });
  process.emit(SIGNAL, SIGNAL);
  expect(life.shuttingDown).toBe(true);
  process.emit(SIGNAL, SIGNAL);
  await expect(life.exited).resolves.toBe(1);
  finish();
  expect(runs).toBe(1);
});

test('the steps finishing resolve the exit code 0; exit() may end the process earlier with its own code', async () => {
  const life = new ProcessLifecycle(SILENT_LOGGER, [SIGNAL]);
  life.onShutdown(async () => undefined);
  process.emit(SIGNAL, SIGNAL);
  await expect(life.exited).resolves.toBe(0);
  const lost = new ProcessLifecycle(SILENT_LOGGER, [SIGNAL]);
  lost.exit(1);
  await expect(lost.exited).resolves.toBe(1);
});
