/**
 * `run` over gRPC against a scripted h2c server on 127.0.0.1 that misbehaves the way a stalled
 * runtime or router can: the Start stream never ends and SendSignal never answers.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as runtime from '../../operator/src/sandboxd/process-proto';
import { ProcessClient } from '../src/process-client';
import { frame } from '../src/process-wire';

interface Scripted {
  readonly url: string;
  readonly calls: string[];
  close(): Promise<void>;
}

/** A gRPC server whose handler per method is given; streams it leaves open stay open. */
async function scriptedServer(handlers: Record<string, (stream: http2.ServerHttp2Stream) => void>): Promise<Scripted> {
  const calls: string[] = [];
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    const method = String(headers[':path']).split('/').pop()!;
    calls.push(method);
    stream.on('error', () => undefined);
    stream.resume();
    handlers[method]?.(stream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    calls,
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const event = (e: runtime.StartEvent) => frame(runtime.encodeStartResponse({ event: e }));

describe('run over gRPC against a stalled server', () => {
  let server: Scripted | undefined;
  afterEach(async () => server?.close());

  test('after the time-limit kill, a Start stream that never ends is given up: timedOut, 124, output kept', async () => {
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
        stream.write(event({ init: { processId: 7 } }));
        stream.write(event({ stdout: Buffer.from('started\n') }));
        // ...and nothing more, ever.
      },
      SendSignal: () => undefined, // never answers
    });
    const client = new ProcessClient(async () => ({ baseUrl: server!.url, headers: {}, viaRouter: false }), 'sb-test', 200);
    const result = await client.run({ command: ['sleep', '60'] }, { timeoutMs: 100 });
    expect(result).toEqual({ stdout: 'started\n', stderr: '', exitCode: 124, timedOut: true });
    expect(server.calls).toEqual(['Start', 'SendSignal']);
  }, 10_000);
});
