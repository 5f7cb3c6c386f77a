/**
 * A Sandbox handle wired straight to a runtime URL (no cluster), for the tests of run and files:
 * everything between the handle and the HTTP exchange is the SDK's real code.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { RuntimeProcess, startRuntime } from './runtime-process';
import { KubeApi } from '../src/kube';
import { ProcessClient } from '../src/process-client';
import { RetryOptions } from '../src/retry';
import { Endpoint, RuntimeApi } from '../src/runtime-api';
import { Sandbox } from '../src/sandbox';
import { Tracing, TracerLike } from '../src/tracing';

export interface HandleOptions {
  readonly headers?: Record<string, string>;
  readonly viaRouter?: boolean;
  readonly retry?: RetryOptions;
  readonly tracer?: TracerLike;
  /** Run commands over sandboxd's gRPC ProcessService at this URL. */
  readonly grpcUrl?: string;
  /** The client's grpcPort, for `pty` (unset: the runtime's GET / names it). */
  readonly grpcPort?: number;
}

export function handleFor(url: string, options: HandleOptions = {}): Sandbox {
  const endpoint: Endpoint = { baseUrl: url, headers: options.headers ?? {}, viaRouter: options.viaRouter ?? false };
  const tracing = new Tracing(options.tracer);
  const runtime = new RuntimeApi(async () => endpoint, 'sb-test', options.retry ?? { initialDelayMs: 1, maxDelayMs: 5 }, tracing);
  return new Sandbox({
    claim: { metadata: { name: 'claim-test', namespace: 'default' }, spec: { warmPoolRef: { name: 'pool' } } },
    sandbox: 'sb-test',
    kube: new KubeApi(new KubeConfig()),
    runtime,
    processes: options.grpcUrl === undefined ? undefined : new ProcessClient(async () => ({ ...endpoint, baseUrl: options.grpcUrl! }), 'sb-test'),
    // Another port of the sandbox: through the router by its X-Sandbox-Port, else that port of the runtime's host.
    pty: {
      grpcPort: options.grpcPort,
      runtime: async () => endpoint,
      processes: (port, hint) => new ProcessClient(async () => (endpoint.viaRouter
        ? { ...endpoint, headers: { ...endpoint.headers, 'X-Sandbox-Port': String(port) } }
        : { ...endpoint, baseUrl: `http://${new URL(url).hostname}:${port}` }), 'sb-test', undefined, hint),
      requestTimeoutMs: 10_000,
    },
    tracing,
    requestTimeoutMs: 10_000,
    release: () => undefined,
  });
}

/** Starts a real runtime before the file's tests and stops it after; the getter gives it and a handle to it. */
export function runtimeFixture(extraArgs: readonly string[] | (() => Promise<string[]>) = []): () => { runtime: RuntimeProcess; sandbox: Sandbox } {
  let runtime: RuntimeProcess | undefined;
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    runtime = await startRuntime(typeof extraArgs === 'function' ? await extraArgs() : extraArgs);
    sandbox = handleFor(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });
  return () => ({ runtime: runtime!, sandbox: sandbox! });
}
