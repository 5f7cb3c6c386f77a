/**
 * Splits a watch response body (one JSON event per line) into events. Chunks from the socket
 * can end anywhere: inside an event, between the bytes of one UTF-8 character, or right after a
 * newline; a StringDecoder keeps split characters intact and the unfinished line is carried over.
 */
import { StringDecoder } from 'node:string_decoder';

export class WatchStreamParser<E = unknown> {
  private readonly decoder = new StringDecoder('utf8');
  /** The unfinished last line; concatenation keeps a large event arriving in many chunks linear. */
  private partial = '';

  public constructor(private readonly onEvent: (event: E) => void) {}

  /** Feed one chunk; calls onEvent for every complete line. Throws on a line that is not JSON. */
  public push(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      const line = this.partial + text.slice(start, nl);
      this.partial = '';
      start = nl + 1;
      this.emit(line);
    }
    this.partial += text.slice(start);
  }

  /**
   * The stream ended. A complete last event without its newline is still delivered; anything
   * else left over is a truncated event (the connection died mid-event), reported by throwing
   * so the caller resumes from the last event it did see.
   */
  public end(): void {
    const rest = (this.partial + this.decoder.end()).trim();
    this.partial = '';
    if (rest === '') return;
    let event: E;
    try {
      event = JSON.parse(rest) as E;
    } catch {
      throw new Error(`watch stream ended in the middle of an event (${rest.length} characters unparsed)`);
    }
    this.onEvent(event);
  }

  private emit(line: string): void {
    if (line.trim() === '') return;
    let event: E;
    try {
      event = JSON.parse(line) as E;
    } catch (e) {
      throw new Error(`watch stream sent a line that is not JSON (${(e as Error).message}): ${line.slice(0, 200)}`);
    }
    this.onEvent(event);
  }
}
