/**
 * `multipart/form-data` uploads, read with busboy (a streaming parser): the part named `file` is
 * written to the sink its filename asks for, with backpressure all the way to the socket; other
 * parts are skipped unread. Memory stays bounded whatever the body holds (busboy keeps at most a
 * part header, 16 KiB, and a chunk), and chunked request bodies (no Content-Length, as the SDK
 * sends streamed uploads) are fine. A malformed body rejects with a MultipartError that says what
 * is wrong, once busboy notices: a missing boundary at once, a body that never reaches its closing
 * boundary when it ends.
 */
import { Readable, Writable, finished } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';

export class MultipartError extends Error {}

export interface PartSink {
  readonly stream: Writable;
  /** Called after the part's last byte was written and the stream ended. */
  finish(): Promise<void>;
  /** Called when the body ends early or fails. */
  abort(): Promise<void>;
}

/** Whether a Content-Type asks for a multipart form (its boundary is busboy's to check). */
export function isMultipart(contentType: string | undefined): contentType is string {
  return contentType !== undefined && /^multipart\/form-data\s*(;|$)/i.test(contentType);
}

/** Part values we never use are read into at most this many bytes (busboy drops the rest). */
const FIELD_BYTES = 1024;

/** busboy's messages, said in terms of what the client sent. */
function explain(message: string): string {
  if (/boundary not found/i.test(message)) return 'the Content-Type has no boundary parameter';
  if (/unexpected end of form/i.test(message)) return 'the body ended before its closing boundary ("--<boundary>--")';
  if (/malformed part header/i.test(message)) return 'a part header is malformed, or longer than 16 KiB without ending in a blank line';
  if (/unexpected end of file/i.test(message)) return 'the body ended inside the "file" part';
  return message;
}

function malformed(err: unknown): MultipartError {
  return new MultipartError(`Malformed multipart/form-data body: ${explain((err as Error).message)}`);
}

/**
 * Reads `body` to its end. `openFile(filename)` is called for the first part named `file`; it
 * returns the sink to stream into. Resolves with that part's filename (undefined when there was
 * none) once the sink has finished; rejects with MultipartError on a malformed body, after
 * aborting the sink. The caller still owns `body`: on a rejection it has stopped being read.
 */
export async function readFilePart(
  body: Readable,
  contentType: string,
  openFile: (filename: string) => Promise<PartSink>,
): Promise<string | undefined> {
  let parser: busboy.Busboy;
  try {
    // preservePath: the filename is the destination path, not only its last part.
    parser = busboy({ headers: { 'content-type': contentType }, preservePath: true, defParamCharset: 'utf8', limits: { fieldSize: FIELD_BYTES } });
  } catch (err) {
    throw malformed(err);
  }
  let found: string | undefined;
  let copying: Promise<void> = Promise.resolve();
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on('file', (name, stream, info) => {
      // busboy fails a part's stream with the body: the copy below sees that through pipeline.
      stream.on('error', () => undefined);
      if (name !== 'file' || found !== undefined) {
        stream.resume();
        return;
      }
      if (info.filename === undefined) {
        stream.resume();
        reject(new MultipartError('the "file" part has no filename'));
        return;
      }
      found = info.filename;
      // Until the sink is open the part stream is paused, and busboy stops taking the body.
      copying = openFile(info.filename).then(async (sink) => {
        try {
          await pipeline(stream, sink.stream);
          await sink.finish();
        } catch (err) {
          sink.stream.destroy();
          await sink.abort();
          throw err;
        }
      });
      copying.catch(reject);
    });
    parser.on('field', (name) => {
      if (name === 'file' && found === undefined) reject(new MultipartError('the "file" part has no filename'));
    });
    parser.on('error', (err) => reject(malformed(err)));
    parser.on('close', resolve);
    finished(body, (err) => {
      if (err) reject(new MultipartError(`the request body was cut off: ${err.message}`));
    });
  });
  body.pipe(parser);
  try {
    await parsed;
    await copying;
    return found;
  } catch (err) {
    body.unpipe(parser);
    // The part stream ends with the parser, and the copy then aborts its sink: wait for that.
    parser.destroy();
    await copying.catch(() => undefined);
    throw err;
  }
}
