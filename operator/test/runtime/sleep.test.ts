/** sleep(): any of several signals ends it, and it leaves no listener behind on a long-lived one. */
import { getEventListeners } from 'node:events';
import { FakeClock } from './fake-clock';
import { sleep } from '../../src/runtime/clock';

test('the delay, or whichever signal aborts first, ends the sleep; no listener stays on the long-lived signal', async () => {
  const clock = new FakeClock();
  const process = new AbortController();
  const wake = new AbortController();
  let done = false;
  const slept = sleep(clock, 1_000, process.signal, wake.signal).then(() => (done = true));
  expect(getEventListeners(process.signal, 'abort')).toHaveLength(1);
  wake.abort();
  await slept;
  expect(done).toBe(true);
  expect(clock.pending).toBe(0);
  expect(getEventListeners(process.signal, 'abort')).toHaveLength(0);
  // Timed out: listeners go too; a hundred sleeps leave none.
  for (let i = 0; i < 100; i++) {
    const s = sleep(clock, 10, process.signal, new AbortController().signal);
    clock.advance(10);
    await s;
  }
  expect(getEventListeners(process.signal, 'abort')).toHaveLength(0);
  // Already aborted: at once, no timer.
  await sleep(clock, 1_000, undefined, wake.signal);
  expect(clock.pending).toBe(0);
});
