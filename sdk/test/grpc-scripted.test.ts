/**
 * `run` over gRPC against a scripted h2c server on 127.0.0.1 that misbehaves the way a stalled
 * runtime or router can (the Start stream never ends, SendSignal never answers), sends a
 * malformed status message, cuts the Start stream before its exit event (ended without a status,
 * reset, connection lost: a SandboxGrpcError UNAVAILABLE saying whether the command may still be
 * running; a real status is kept; a cut after the exit event still gives the result) or answers
 * HTTP that is not gRPC, and with output callbacks that throw.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { SandboxGrpcError } from '../src/errors';
import { ProcessClient } from '../src/process-client';
import { encodeStartResponse, type StartEvent } from '../src/process-proto';
import { frame } from '../src/process-wire';

interface Scripted {
  readonly url: string;
  readonly calls: string[];
  close(): Promise<void>;
}

type Handler = (stream: http2.ServerHttp2Stream, session: http2.Http2Session) => void;

/** A gRPC server whose handler per method is given; streams it leaves open stay open. */
async function scriptedServer(handlers: Record<string, Handler>): Promise<Scripted> {
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
    handlers[method]?.(stream, stream.session!);
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

const event = (e: StartEvent) => frame(encodeStartResponse({ event: e }));
const GRPC = { ':status': 200, 'content-type': 'application/grpc' };
const clientFor = (url: string) => new ProcessClient(async () => ({ baseUrl: url, headers: {}, viaRouter: false }), 'sb-test');

async function failure(promise: Promise<unknown>): Promise<any> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  if (err === undefined) throw new Error('expected the call to fail');
  return err;
}

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

  test('a grpc-message that is not valid percent-encoding is kept as it came', async () => {
    server = await scriptedServer({
      Start: (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '2', 'grpc-message': 'bad %E0%A4%A' }, { endStream: true }),
    });
    const err = await clientFor(server.url).run({ command: ['true'] }, { timeoutMs: 5_000 }).catch((e: unknown) => e);
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
    const run = clientFor(server.url).run({ command: ['sleep', '60'] }, {
      timeoutMs: 60_000,
      [callback]: () => {
        throw new Error('callback failed');
      },
    });
    await expect(run).rejects.toThrow('callback failed');
    await killed;
  }, 10_000);
});

describe('a Start stream cut before its exit event', () => {
  let server: Scripted | undefined;
  afterEach(async () => server?.close());

  test('ended without a status after init: UNAVAILABLE, "cut", and the command may still be running', async () => {
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond(GRPC);
        stream.write(event({ init: { processId: 7 } }));
        stream.end(event({ stdout: Buffer.from('started\n') }));
      },
    });
    const err = await failure(clientFor(server.url).run({ command: ['sleep', '60'] }, { timeoutMs: 60_000 }));
    expect(err).toBeInstanceOf(SandboxGrpcError);
    expect(err.code).toBe(14);
    expect(err.details).toMatch(/^the Start stream was cut before the exit event \(it ended without a status\); the command \(process 7\) may still be running in the sandbox/);
  });

  test('reset after init: UNAVAILABLE naming the HTTP/2 error', async () => {
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond(GRPC);
        // An RST_STREAM with INTERNAL_ERROR once the init is out.
        stream.write(event({ init: { processId: 8 } }), () => setImmediate(() => stream.destroy(new Error('cut'))));
      },
    });
    const err = await failure(clientFor(server.url).run({ command: ['sleep', '60'] }, { timeoutMs: 60_000 }));
    expect(err).toMatchObject({ code: 14 });
    expect(err.details).toMatch(/cut before the exit event \(Stream closed with error code NGHTTP2_INTERNAL_ERROR\); the command \(process 8\) may still be running/);
  });

  test('connection lost before init: UNAVAILABLE, and the command may or may not have started', async () => {
    server = await scriptedServer({
      Start: (stream, session) => {
        stream.respond(GRPC);
        session.destroy();
      },
    });
    const err = await failure(clientFor(server.url).run({ command: ['true'] }, { timeoutMs: 60_000 }));
    expect(err).toMatchObject({ code: 14 });
    expect(err.details).toMatch(/cut before the exit event .*may or may not have started/);
  });

  test('a real status is kept (INTERNAL stays 13), not turned into a cut', async () => {
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond(GRPC, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '13', 'grpc-message': 'boom' }));
        stream.end(event({ init: { processId: 9 } }));
      },
    });
    expect(await failure(clientFor(server.url).run({ command: ['true'] }, { timeoutMs: 60_000 }))).toMatchObject({ code: 13, details: 'boom' });
  });

  test('the control: cut after the exit event, the command has ended and its result is given', async () => {
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond(GRPC);
        stream.write(event({ init: { processId: 10 } }));
        stream.write(event({ stdout: Buffer.from('done\n') }));
        stream.end(event({ exit: { exitCode: 3 } }));
      },
    });
    expect(await clientFor(server.url).run({ command: ['true'] }, { timeoutMs: 60_000 })).toEqual({ stdout: 'done\n', stderr: '', exitCode: 3, timedOut: false });
  });

  test('a live process (a PTY session\'s) whose stream is cut: its exit rejects with the same UNAVAILABLE', async () => {
    server = await scriptedServer({
      Start: (stream) => {
        stream.respond(GRPC);
        stream.write(event({ init: { processId: 11 } }), () => setImmediate(() => stream.destroy(new Error('cut'))));
      },
    });
    const live = await clientFor(server.url).start({ command: ['sh'], pty: { cols: 80, rows: 24 } }, () => undefined);
    expect(live.processId).toBe(11);
    const err = await failure(live.exited);
    expect(err).toMatchObject({ code: 14 });
    expect(err.details).toMatch(/process 11\) may still be running/);
  });
});

describe('an HTTP/2 server that is no gRPC server', () => {
  test('an HTTP/2 server that is no gRPC server: its HTTP answer is named', async () => {
    const server = await scriptedServer({ Start: (stream) => stream.respond({ ':status': 404, 'content-type': 'text/plain' }, { endStream: true }) });
    try {
      const err = await failure(clientFor(server.url).run({ command: ['true'] }, { timeoutMs: 60_000 }));
      expect(err.code).toBe(14);
      expect(err.details).toMatch(/: it answered HTTP 404 \(text\/plain\), not gRPC\. Fix: /);
    } finally {
      await server.close();
    }
  });
});
