/**
 * File reads against a scripted HTTP server on 127.0.0.1 whose answer stalls after its headers and
 * part of its body: a read whole gives up after the time limit of a pause, and a call's signal
 * still holds while a body arrives (buffered or streamed).
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { handleFor } from './handle';
import { SandboxTimeoutError } from '../src/errors';

let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '1000' });
    res.write('partial');
    // ...and the rest never comes.
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('a body that stalls after the headers', () => {
  test('read gives up with a SandboxTimeoutError once a pause exceeds timeoutMs', async () => {
    const err = await handleFor(url).files.read('x.bin', { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxTimeoutError);
    expect((err as Error).message).toMatch(/stalled/);
  }, 10_000);

  test('readText stops on an abort while the body is arriving, with the signal\'s reason', async () => {
    const controller = new AbortController();
    const pending = handleFor(url).files.readText('x.txt', { timeoutMs: 60_000, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort(new Error('caller gave up'));
    await expect(pending).rejects.toThrow('caller gave up');
  }, 10_000);

  test('readStream: an abort after the headers destroys the stream with the signal\'s reason', async () => {
    const controller = new AbortController();
    const stream = await handleFor(url).files.readStream('x.bin', { signal: controller.signal });
    const failed = new Promise((resolve) => stream.once('error', resolve));
    stream.resume();
    controller.abort(new Error('caller gave up'));
    expect(((await failed) as Error).message).toBe('caller gave up');
  }, 10_000);
});
