/**
 * A minimal RFC 6455 WebSocket client over a raw loopback socket, enough to hold a real WebSocket
 * through the router to the echo fixture: the handshake (its Sec-WebSocket-Accept checked), masked
 * text frames out, unmasked frames in. Node 20 has no WebSocket client of its own.
 */
/* eslint-disable no-bitwise -- a WebSocket frame header is bit fields */
import * as crypto from 'crypto';
import * as net from 'net';
import { assertLoopback } from '../../../tools/control-plane/api';

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export class WebSocketClient {
  /** Opens `ws://127.0.0.1:<port><path>`; rejects with the response head unless the answer is a valid 101. */
  public static connect(port: number, path: string, headers: Record<string, string> = {}): Promise<WebSocketClient> {
    assertLoopback(`http://127.0.0.1:${port}`);
    const key = crypto.randomBytes(16).toString('base64');
    const expected = crypto.createHash('sha1').update(key + WS_GUID).digest('base64');
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      let head = Buffer.alloc(0);
      const onData = (data: Buffer) => {
        head = Buffer.concat([head, data]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        const text = head.subarray(0, end).toString('utf8');
        const accept = /^sec-websocket-accept:\s*(\S+)/im.exec(text)?.[1];
        if (!/^HTTP\/1\.1 101 /.test(text) || accept !== expected) {
          socket.destroy();
          reject(new Error(`WebSocket handshake failed:\n${text}\n${head.subarray(end + 4).toString('utf8')}`));
          return;
        }
        resolve(new WebSocketClient(socket, head.subarray(end + 4)));
      };
      socket.on('data', onData);
      socket.once('error', reject);
      const lines = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: Upgrade', 'Upgrade: websocket',
        'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${key}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
  }

  private buffered: Buffer;
  private readonly waiting: Array<(text: string) => void> = [];
  private readonly received: string[] = [];
  public readonly closed: Promise<void>;

  private constructor(private readonly socket: net.Socket, rest: Buffer) {
    this.buffered = rest;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (data) => {
      this.buffered = Buffer.concat([this.buffered, data]);
      this.drain();
    });
    socket.on('error', () => undefined);
    this.drain();
  }

  public send(text: string): void {
    const payload = Buffer.from(text, 'utf8');
    if (payload.length >= 126) throw new Error('this client sends only short frames (< 126 bytes)');
    const mask = crypto.randomBytes(4);
    const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
    this.socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]));
  }

  /** The next text message. */
  public next(): Promise<string> {
    const ready = this.received.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve);
      void this.closed.then(() => reject(new Error('the WebSocket closed before a message arrived')));
    });
  }

  public close(): void {
    this.socket.destroy();
  }

  private drain(): void {
    while (this.buffered.length >= 2) {
      const len = this.buffered[1] & 0x7f;
      if (len >= 126) throw new Error('this client reads only short frames (< 126 bytes)');
      if (this.buffered.length < 2 + len) return;
      const opcode = this.buffered[0] & 0x0f;
      const text = this.buffered.subarray(2, 2 + len).toString('utf8');
      this.buffered = this.buffered.subarray(2 + len);
      if (opcode !== 0x1) continue;
      const waiter = this.waiting.shift();
      if (waiter) waiter(text);
      else this.received.push(text);
    }
  }
}
