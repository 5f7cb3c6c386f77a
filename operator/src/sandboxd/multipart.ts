/**
 * A streaming `multipart/form-data` reader for `/upload`: the part named `file` is written to the
 * sink its filename asks for, chunk by chunk, with backpressure; other parts are skipped. Nothing
 * is buffered beyond one chunk plus a delimiter's length, and chunked request bodies (no
 * Content-Length, as the SDK sends streamed uploads) are fine.
 */
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';

export class MultipartError extends Error {}

export interface PartSink {
  readonly stream: Writable;
  /** Called after the part's last byte was written and the stream ended. */
  finish(): Promise<void>;
  /** Called when the body ends early or fails. */
  abort(): Promise<void>;
}

/** The boundary of a `multipart/form-data` Content-Type, or undefined. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match ? match[1] ?? match[2] : undefined;
}

export interface PartHeaders {
  readonly name?: string;
  readonly filename?: string;
}

export function parsePartHeaders(block: string): PartHeaders {
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0 || line.slice(0, colon).trim().toLowerCase() !== 'content-disposition') continue;
    const params = line.slice(colon + 1);
    return { name: param(params, 'name'), filename: param(params, 'filename') };
  }
  return {};
}

function param(params: string, key: string): string | undefined {
  const re = new RegExp(`;\\s*${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, 'i');
  const match = re.exec(params);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2].trim();
}

type State = 'preamble' | 'afterDelimiter' | 'headers' | 'body' | 'done';

/**
 * Reads `body` to its end. `openFile(filename)` is called for the first part named `file`; it
 * returns the sink to stream into. Resolves with that part's filename (undefined when there was
 * none); rejects with MultipartError on a malformed body.
 */
export async function readFilePart(
  body: Readable,
  boundary: string,
  openFile: (filename: string) => Promise<PartSink>,
): Promise<string | undefined> {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  let buffer: Buffer = Buffer.from('\r\n');
  let state: State = 'preamble';
  let sink: PartSink | undefined;
  let writing = false;
  let found: string | undefined;

  const write = async (data: Buffer): Promise<void> => {
    if (!writing || !sink || data.length === 0) return;
    if (!sink.stream.write(data)) await once(sink.stream, 'drain');
  };

  try {
    const step = async (final: boolean): Promise<void> => {
      for (;;) {
        if (state === 'preamble') {
          const at = buffer.indexOf(delimiter);
          if (at < 0) {
            buffer = buffer.subarray(Math.max(0, buffer.length - delimiter.length));
            return;
          }
          buffer = buffer.subarray(at + delimiter.length);
          state = 'afterDelimiter';
        } else if (state === 'afterDelimiter') {
          if (buffer.length < 2) return;
          if (buffer[0] === 0x2d && buffer[1] === 0x2d) {
            state = 'done';
            return;
          }
          const eol = buffer.indexOf('\r\n');
          if (eol < 0) return;
          buffer = buffer.subarray(eol + 2);
          state = 'headers';
        } else if (state === 'headers') {
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) {
            if (buffer.length > 16 * 1024) throw new MultipartError('part headers too large');
            return;
          }
          const headers = parsePartHeaders(buffer.subarray(0, end).toString('utf8'));
          buffer = buffer.subarray(end + 4);
          if (headers.name === 'file' && found === undefined) {
            if (headers.filename === undefined) throw new MultipartError('the "file" part has no filename');
            found = headers.filename;
            sink = await openFile(headers.filename);
            writing = true;
          }
          state = 'body';
        } else if (state === 'body') {
          const at = buffer.indexOf(delimiter);
          if (at >= 0) {
            await write(buffer.subarray(0, at));
            buffer = buffer.subarray(at + delimiter.length);
            if (writing && sink) {
              writing = false;
              sink.stream.end();
              await once(sink.stream, 'finish');
              await sink.finish();
              sink = undefined;
            }
            state = 'afterDelimiter';
          } else {
            const keep = final ? 0 : delimiter.length - 1;
            if (buffer.length > keep) {
              await write(buffer.subarray(0, buffer.length - keep));
              buffer = buffer.subarray(buffer.length - keep);
            }
            return;
          }
        } else {
          return;
        }
      }
    };
    for await (const chunk of body) {
      buffer = buffer.length === 0 ? (chunk as Buffer) : Buffer.concat([buffer, chunk as Buffer]);
      await step(false);
    }
    if ((state as State) !== 'done') throw new MultipartError('the multipart body ended before its closing delimiter');
    return found;
  } catch (err) {
    if (sink) {
      sink.stream.destroy();
      await sink.abort();
    }
    throw err;
  }
}
