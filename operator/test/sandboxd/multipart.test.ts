import { Readable, Writable } from 'node:stream';
import fc from 'fast-check';
import { MultipartError, boundaryOf, parsePartHeaders, readFilePart } from '../../src/sandboxd/multipart';

function body(boundary: string, parts: ReadonlyArray<{ headers: string; content: Buffer }>): Buffer {
  const pieces: Buffer[] = [Buffer.from('preamble\r\n')];
  for (const part of parts) pieces.push(Buffer.from(`--${boundary}\r\n${part.headers}\r\n\r\n`), part.content, Buffer.from('\r\n'));
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(pieces);
}

function chunked(data: Buffer, cuts: readonly number[]): Readable {
  const points = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let last = 0;
  for (const p of [...points, data.length]) {
    if (p > last) chunks.push(data.subarray(last, p));
    last = Math.max(last, p);
  }
  return Readable.from(chunks);
}

async function collect(stream: Readable, boundary: string): Promise<{ filename?: string; content: Buffer }> {
  const chunks: Buffer[] = [];
  const filename = await readFilePart(stream, boundary, async () => ({
    stream: new Writable({ write: (chunk: Buffer, _enc, cb) => { chunks.push(chunk); cb(); } }),
    finish: async () => undefined,
    abort: async () => undefined,
  }));
  return { filename, content: Buffer.concat(chunks) };
}

test('the file part comes out whole however the body is cut into chunks', async () => {
  await fc.assert(fc.asyncProperty(
    fc.uint8Array({ maxLength: 600 }),
    fc.array(fc.nat(), { maxLength: 12 }),
    async (bytes, cuts) => {
      const boundary = '----b0undary';
      // Content that nearly contains the delimiter must survive too.
      const content = Buffer.concat([Buffer.from(bytes), Buffer.from(`\r\n--${boundary.slice(0, -1)}X`), Buffer.from(bytes)]);
      const data = body(boundary, [
        { headers: 'Content-Disposition: form-data; name="meta"', content: Buffer.from('ignored') },
        { headers: 'Content-Disposition: form-data; name="file"; filename="dir/f.bin"', content },
      ]);
      const result = await collect(chunked(data, cuts), boundary);
      expect(result.filename).toBe('dir/f.bin');
      expect(result.content.equals(content)).toBe(true);
    },
  ), { numRuns: 200 });
});

test('a body cut before its closing delimiter is an error', async () => {
  const data = body('xx', [{ headers: 'Content-Disposition: form-data; name="file"; filename="a"', content: Buffer.from('abc') }]);
  await expect(collect(Readable.from([data.subarray(0, data.length - 8)]), 'xx')).rejects.toBeInstanceOf(MultipartError);
});

test('no file part: undefined', async () => {
  const data = body('xx', [{ headers: 'Content-Disposition: form-data; name="other"', content: Buffer.from('abc') }]);
  expect((await collect(Readable.from([data]), 'xx')).filename).toBeUndefined();
});

test('headers and boundaries', () => {
  expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
  expect(boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
  expect(boundaryOf('application/json')).toBeUndefined();
  expect(parsePartHeaders('Content-Disposition: form-data; name="file"; filename="a \\"q\\".txt"')).toEqual({ name: 'file', filename: 'a "q".txt' });
  expect(parsePartHeaders('content-disposition: form-data; name=file; filename=x.txt')).toEqual({ name: 'file', filename: 'x.txt' });
});
