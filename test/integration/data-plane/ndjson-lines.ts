/**
 * An NDJSON answer read line by line as its chunks arrive, for the tests of the runtime's process
 * API (docs/runtime-processes.md), straight (operator/test/sandboxd) or through the router (here).
 */
import * as http from 'node:http';

export class NdjsonLines {
  /** Sends the request (`Accept: application/x-ndjson`, a JSON body when given) to 127.0.0.1:`port`. */
  public static open(port: number, method: string, urlPath: string, body?: unknown, headers: http.OutgoingHttpHeaders = {}): Promise<NdjsonLines> {
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent: false,
        headers: { 'Accept': 'application/x-ndjson', 'Content-Type': 'application/json', ...headers },
      }, (res) => resolve(new NdjsonLines(req, res)));
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  private buffer = '';
  private readonly queue: any[] = [];
  private wake?: () => void;
  private ended = false;
  /** Every line so far, pings included. */
  public readonly all: any[] = [];

  private constructor(private readonly req: http.ClientRequest, public readonly res: http.IncomingMessage) {
    res.setEncoding('utf8');
    res.on('data', (text: string) => {
      this.buffer += text;
      for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
        const line = JSON.parse(this.buffer.slice(0, nl));
        this.buffer = this.buffer.slice(nl + 1);
        this.all.push(line);
        this.queue.push(line);
      }
      this.wake?.();
    });
    for (const event of ['end', 'close', 'error']) {
      res.on(event, () => {
        this.ended = true;
        this.wake?.();
      });
    }
  }

  /** The next line that is not a ping; undefined once the answer has ended. */
  public async next(): Promise<any> {
    for (;;) {
      const line = this.queue.shift();
      if (line !== undefined && line.type !== 'ping') return line;
      if (line !== undefined) continue;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Every remaining line but pings, until the answer ends. */
  public async rest(): Promise<any[]> {
    const lines: any[] = [];
    for (let line = await this.next(); line !== undefined; line = await this.next()) lines.push(line);
    return lines;
  }

  /** Drops the connection, as a router restart or a lost network would. */
  public cut(): void {
    this.req.destroy();
    this.res.destroy();
  }
}
