/**
 * `run` over gRPC against a scripted h2c server on 127.0.0.1 that misbehaves the way a stalled
 * runtime or router can (the Start stream never ends, SendSignal never answers) or sends a
 * malformed status message, and with output callbacks that throw.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as runtime from '../../operator/src/sandboxd/process-proto';
import { SandboxGrpcError } from '../src/errors';
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

describe('run over gRPC: bad status messages and throwing callbacks', () => {
  let server: Scripted | undefined;
  afterEach(async () => server?.close());
  const clientFor = (s: Scripted) => new ProcessClient(async () => ({ baseUrl: s.url, headers: {}, viaRouter: false }), 'sb-test');

  test('a grpc-message that is not valid percent-encoding is kept as it came', async () => {
    server = await scriptedServer({
      Start: (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '2', 'grpc-message': 'bad %E0%A4%A' }, { endStream: true }),
    });
    const err = await clientFor(server).run({ command: ['true'] }, { timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxGrpcError);
    expect(err).toMatchObject({ code: 2, details: 'bad %E0%A4%A' });
  }, 10_000);

  test.each(['onStdout', 'onStderr'] as const)('%s that throws ends the run with its error and kills the process', async (callback) => {
    let signalled!: () => void;
    const killed = new Promise<void>((resolve) => (signalled = resolve));
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
        stream.write(event({ init: { processId: 7 } }));
        stream.write(event(callback === 'onStdout' ? { stdout: Buffer.from('out\n') } : { stderr: Buffer.from('err\n') }));
      },
      SendSignal: (stream) => {
        signalled();
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' }, { endStream: true });
      },
    });
    const run = clientFor(server).run({ command: ['sleep', '60'] }, {
      timeoutMs: 60_000,
      [callback]: () => {
        throw new Error('callback failed');
      },
    });
    await expect(run).rejects.toThrow('callback failed');
    await killed;
  }, 10_000);
});
