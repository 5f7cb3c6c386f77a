import { Readable, Writable } from 'node:stream';
import fc from 'fast-check';
import { MultipartError, isMultipart, readFilePart } from '../../src/sandboxd/multipart';

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
  const filename = await readFilePart(stream, `multipart/form-data; boundary=${boundary}`, async () => ({
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

test('content types', () => {
  expect(isMultipart('multipart/form-data; boundary=abc')).toBe(true);
  expect(isMultipart('Multipart/Form-Data;boundary="a b"')).toBe(true);
  expect(isMultipart('application/json')).toBe(false);
  expect(isMultipart('multipart/form-datax; boundary=a')).toBe(false);
  expect(isMultipart(undefined)).toBe(false);
});

test('filenames: the whole path is kept, quoted-pairs and UTF-8 are decoded, unquoted values work', async () => {
  const name = async (disposition: string) => (await collect(Readable.from([body('xx', [{ headers: disposition, content: Buffer.from('x') }])]), 'xx')).filename;
  expect(await name('Content-Disposition: form-data; name="file"; filename="dir/sub/a.txt"')).toBe('dir/sub/a.txt');
  expect(await name('Content-Disposition: form-data; name="file"; filename="a \\"q\\".txt"')).toBe('a "q".txt');
  expect(await name('content-disposition: form-data; name=file; filename=x.txt')).toBe('x.txt');
  expect(await name('Content-Disposition: form-data; name="file"; filename="d/n\u00e4me.txt"')).toBe('d/n\u00e4me.txt');
});

test.each([
  ['no boundary parameter', 'multipart/form-data', '--xx\r\n', /no boundary/],
  ['a "file" part without a filename', 'multipart/form-data; boundary=xx', '--xx\r\nContent-Disposition: form-data; name="file"\r\n\r\nv\r\n--xx--\r\n', /no filename/],
  ['a header without its blank line', 'multipart/form-data; boundary=xx', `--xx\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nX: ${'y'.repeat(20_000)}`, /part header/],
])('%s is a MultipartError that says so', async (_label, contentType, data, message) => {
  let opened = 0;
  const promise = readFilePart(Readable.from([Buffer.from(data)]), contentType, async () => {
    opened++;
    return { stream: new Writable({ write: (_c, _e, cb) => cb() }), finish: async () => undefined, abort: async () => undefined };
  });
  await expect(promise).rejects.toBeInstanceOf(MultipartError);
  await expect(promise).rejects.toThrow(message);
  expect(opened).toBe(0);
});

test('a body cut inside the file part aborts the sink it had opened', async () => {
  const events: string[] = [];
  const data = Buffer.from('--xx\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nhalf');
  const promise = readFilePart(Readable.from([data]), 'multipart/form-data; boundary=xx', async () => ({
    stream: new Writable({ write: (_c, _e, cb) => cb() }),
    finish: async () => void events.push('finish'),
    abort: async () => void events.push('abort'),
  }));
  await expect(promise).rejects.toThrow(/ended/);
  expect(events).toEqual(['abort']);
});
