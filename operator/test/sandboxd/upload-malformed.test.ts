/**
 * A malformed multipart upload is a 400 that names the problem, read with bounded memory while the
 * runtime keeps answering: the probe's 64 MiB after a boundary with no CRLF once took minutes of CPU
 * and 260 MB of memory, and /healthz went unanswered meanwhile.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { Reply, json, request, runtimeFixture, upload } from './runtime-http';

const MiB = 1024 * 1024;

const rt = runtimeFixture('sandboxd-multipart-', { filesPort: 0 });

interface Streamed {
  readonly reply: Reply;
  /** The largest RSS growth of this process seen while the body was sent and answered. */
  readonly rssGrowth: number;
  /** /healthz's status, asked once half the body had been taken by the server. */
  readonly healthMidway: number;
}

/**
 * POSTs `head`, then `size` bytes of `filler` (one reused 64 KiB buffer, with backpressure), to
 * /upload; halfway it asks /healthz on another connection and waits for the answer.
 */
function streamUpload(head: string, filler: number, size: number): Promise<Streamed> {
  const chunk = Buffer.alloc(64 * 1024, filler);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  return new Promise<Streamed>((resolve, reject) => {
    let healthMidway = 0;
    const req = http.request({
      host: '127.0.0.1',
      port: rt.port,
      method: 'POST',
      path: '/upload',
      agent: false,
      headers: { 'Content-Type': 'multipart/form-data; boundary=xx' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearInterval(sampler);
        peak = Math.max(peak, process.memoryUsage().rss);
        const reply = { status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers };
        resolve({ reply, rssGrowth: peak - before, healthMidway });
      });
    });
    // An answer before the whole body was sent closes the connection: writes after it may fail.
    req.on('error', (err) => (req.writableFinished ? undefined : reject(err)));
    const send = async () => {
      req.write(head);
      for (let sent = 0; sent < size && !req.destroyed; sent += chunk.length) {
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
        if (sent === size / 2) healthMidway = (await request(rt.port, 'GET', '/healthz')).status;
      }
      req.end();
    };
    send().catch(reject);
  });
}

test('64 MiB after a boundary with no CRLF: a 400 naming the problem, /healthz answered meanwhile, memory bounded', async () => {
  const { reply, rssGrowth, healthMidway } = await streamUpload('--xx', 0x61, 64 * MiB);
  // Negative control: the server was still reading the body when /healthz was asked, and answered it.
  expect(healthMidway).toBe(200);
  expect(rssGrowth).toBeLessThan(64 * MiB);
  expect(reply.status).toBe(400);
  expect(json(reply).detail).toMatch(/malformed multipart\/form-data body: .*(end|boundary)/i);
  expect(readdirSync(rt.workspace)).toEqual([]);
}, 120_000);

test('a part header that never ends (64 MiB without a blank line) is a 400 naming the header', async () => {
  const head = '--xx\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nX-Junk: ';
  const { reply, rssGrowth } = await streamUpload(head, 0x62, 64 * MiB);
  expect(reply.status).toBe(400);
  expect(json(reply).detail).toMatch(/malformed multipart\/form-data body: .*header/i);
  expect(rssGrowth).toBeLessThan(64 * MiB);
  expect(readdirSync(rt.workspace)).toEqual([]);
}, 120_000);

test('a body that ends inside the file part is a 400, and no partial file is left behind', async () => {
  const body = '--xx\r\nContent-Disposition: form-data; name="file"; filename="cut.txt"\r\n\r\nhalf a fi';
  const reply = await request(rt.port, 'POST', '/upload', { body, headers: { 'Content-Type': 'multipart/form-data; boundary=xx' } });
  expect(reply.status).toBe(400);
  expect(json(reply).detail).toMatch(/malformed multipart\/form-data body: .*end/i);
  expect(readdirSync(rt.workspace)).toEqual([]);
});

test('the FilesystemService\'s multipart PUT answers a malformed body with INVALID_ARGUMENT naming it', async () => {
  const body = '--xx\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nno closing boundary';
  const headers = { 'Content-Type': 'multipart/form-data; boundary=xx' };
  const reply = await request(rt.server.filesAddress!.port, 'PUT', '/v1/files/put.txt', { body, headers });
  expect(reply.status).toBe(400);
  expect(json(reply)).toEqual({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/malformed multipart\/form-data body: .*ended/i) });
  expect(readdirSync(rt.workspace)).toEqual([]);
});

test('after all that, a well-formed upload still lands whole', async () => {
  const content = Buffer.alloc(3 * MiB + 5, 0x63);
  const reply = await upload(rt.port, 'after/ok.bin', content);
  expect(reply.status).toBe(200);
  expect(readFileSync(path.join(rt.workspace, 'after', 'ok.bin')).equals(content)).toBe(true);
  expect(readdirSync(path.join(rt.workspace, 'after'))).toEqual(['ok.bin']);
});
