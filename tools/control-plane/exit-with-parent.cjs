/**
 * Preloaded (`node --require`) into every Node.js process the pod runner starts: the runner holds
 * the write end of the process's stdin, so stdin closing means the runner is gone (even by
 * SIGKILL), and the process then stops itself with SIGTERM, the same graceful path a Pod deletion
 * takes. This is what keeps a killed runner from leaving sandbox runtimes behind.
 */
'use strict';

if (!process.stdin.isTTY) {
  process.stdin.on('data', () => undefined);
  process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
  process.stdin.on('error', () => process.kill(process.pid, 'SIGTERM'));
}
