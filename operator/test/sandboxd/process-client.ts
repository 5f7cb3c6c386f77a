/**
 * A grpc-js client of process.v1.ProcessService built from our codec, with promise helpers for
 * the tests of the runtime and of the router.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import {
  type ExecuteRequest, type ExecuteResponse, PROCESS_SERVICE_DEFINITION, type StartRequest, type StartResponse,
} from '../../../sdk/src/process-proto';

const Client = grpc.makeGenericClientConstructor(PROCESS_SERVICE_DEFINITION, 'ProcessService');
export type ProcessClient = InstanceType<typeof Client>;

/** A plaintext client of `address` (host:port). */
export function processClient(address: string): ProcessClient {
  return new Client(address, grpc.credentials.createInsecure());
}

export interface CallOptions {
  readonly metadata?: Record<string, string>;
  readonly deadlineMs?: number;
}

function metadataOf(opts: CallOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
  return md;
}

function callOptions(opts: CallOptions): grpc.CallOptions {
  return opts.deadlineMs === undefined ? {} : { deadline: Date.now() + opts.deadlineMs };
}

/** A unary call; rejects with the grpc-js ServiceError (code, details). */
export function unary<Req, Res>(client: ProcessClient, rpc: 'Execute' | 'WriteStdin' | 'SendSignal' | 'ResizeTTY', req: Req, opts: CallOptions = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (...a: unknown[]) => void>)[rpc].bind(client);
    fn(req, metadataOf(opts), callOptions(opts), (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)));
  });
}

export const execute = (client: ProcessClient, req: ExecuteRequest, opts: CallOptions = {}) => unary<ExecuteRequest, ExecuteResponse>(client, 'Execute', req, opts);

/** A Start stream: `events` in order, and `done` with the final status. */
export function start(client: ProcessClient, req: StartRequest, opts: CallOptions = {}, onEvent?: (e: StartResponse) => void) {
  const events: StartResponse[] = [];
  const call = (client as unknown as { Start(r: StartRequest, m: grpc.Metadata, o: grpc.CallOptions): grpc.ClientReadableStream<StartResponse> })
    .Start(req, metadataOf(opts), callOptions(opts));
  const done = new Promise<grpc.StatusObject>((resolve) => {
    call.on('data', (e: StartResponse) => {
      events.push(e);
      onEvent?.(e);
    });
    call.on('error', () => undefined);
    call.on('status', resolve);
  });
  return { call, events, done };
}

/** The first event of a stream, once it arrives. */
export function firstEvent(client: ProcessClient, req: StartRequest, opts: CallOptions = {}) {
  let resolveFirst!: (e: StartResponse) => void;
  const first = new Promise<StartResponse>((r) => (resolveFirst = r));
  const stream = start(client, req, opts, (e) => resolveFirst(e));
  return { ...stream, first };
}

export function stdoutOf(events: readonly StartResponse[]): string {
  return Buffer.concat(events.flatMap((e) => (e.event && 'stdout' in e.event ? [e.event.stdout] : []))).toString('utf8');
}

/** Resolves once `pid` no longer exists (the test's own timeout bounds the wait). */
export async function processGone(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The trimmed content of `file` once something has written it. */
export async function writtenText(file: string): Promise<string> {
  while (!existsSync(file) || readFileSync(file, 'utf8').trim() === '') await new Promise((r) => setTimeout(r, 20));
  return readFileSync(file, 'utf8').trim();
}
