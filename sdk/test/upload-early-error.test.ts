/**
 * A streamed write against a scripted HTTP server on 127.0.0.1 that answers with an error (or not
 * at all) before reading the body: the caller's stream is destroyed, not left waiting for a reader.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { Readable } from 'node:stream';
import { handleFor } from './handle';
import { SandboxHttpError, SandboxTimeoutError } from '../src/errors';

let server: http.Server;
let url: string;
let answer: boolean;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    if (answer) res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"disk full"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A stream that yields one chunk and then never ends. */
function stalled(): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) this.push(Buffer.from('start'));
      sent = true;
    },
  });
}

test('an error answer before the body was read destroys the caller\'s stream', async () => {
  answer = true;
  const content = stalled();
  await expect(handleFor(url).files.write('x.bin', content)).rejects.toThrow(SandboxHttpError);
  expect(content.destroyed).toBe(true);
}, 10_000);

test('no answer within timeoutMs destroys the caller\'s stream', async () => {
  answer = false;
  const content = stalled();
  await expect(handleFor(url).files.write('x.bin', content, { timeoutMs: 200 })).rejects.toThrow(SandboxTimeoutError);
  expect(content.destroyed).toBe(true);
}, 10_000);
