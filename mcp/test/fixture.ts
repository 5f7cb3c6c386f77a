/**
 * Sessions for the server's unit tests: "claims" are handles to one real runtime process (with its
 * gRPC ProcessService, so output streams), each under its own claim name; releasing one is recorded
 * instead of deleting a claim (there is no cluster here).
 */
import type { SandboxHandle } from '@cdk8s-agent-sandbox/sdk';
import { handleFor, runtimeFixture } from '../../sdk/test/handle';
import { freePort } from '../../sdk/test/runtime-process';
import { createSessionServer, type SandboxStatus } from '../src/server';
import { SandboxSession, type SessionOptions } from '../src/session';

export interface Claims {
  /** Claim names in the order they were made, and those released. */
  readonly made: string[];
  readonly released: string[];
  /** The ttl each claim asked for (undefined: the default). */
  readonly ttls: Array<string | undefined>;
  claim: SessionOptions['claim'];
}

/** Starts the runtime for the file's tests; `claims()` makes a fresh record of claims against it. */
export function runtimeClaims(): () => Claims {
  const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);
  return () => {
    const made: string[] = [];
    const released: string[] = [];
    const ttls: Array<string | undefined> = [];
    return {
      made,
      released,
      ttls,
      claim: async (ttl) => {
        const name = `claim-${made.length + 1}`;
        made.push(name);
        ttls.push(ttl);
        const handle = handleFor(fixture().runtime.url, { grpcUrl: fixture().runtime.grpcUrl });
        // The real handle for run and files; its own claim name, and a close that only records.
        return Object.defineProperties(Object.create(handle), {
          claim: { value: name },
          expiresAt: { value: new Date('2030-01-01T00:00:00Z') },
          close: {
            value: async () => {
              released.push(name);
            },
          },
        }) as SandboxHandle;
      },
    };
  };
}

export const readyStatus = async (): Promise<SandboxStatus> => ({ status: 'SandboxReady', message: '' });

/** A session and its server, with the defaults the command line has. */
export function sessionServer(claims: Claims, options: Partial<SessionOptions> = {}) {
  const logs: string[] = [];
  const session = new SandboxSession({ claim: claims.claim, idleTimeoutMs: 0, maxConcurrentCalls: 4, log: (m) => logs.push(m), ...options });
  const server = createSessionServer({
    session, pool: 'python-pool', namespace: 'default', ttl: '30m', maxTtl: '24h', maxOutputBytes: 16_384, idleTimeoutMs: options.idleTimeoutMs ?? 0, status: readyStatus,
  });
  return { session, server, logs };
}
