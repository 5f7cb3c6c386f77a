/**
 * A client whose grpcPort reaches no gRPC server is told so, and how to fix it: connection
 * refused, an HTTP/1.1 server (the runtime's HTTP port), and the same seen by the router (which
 * says it in X-Sandbox-Reason), each a SandboxGrpcError UNAVAILABLE naming the port. The real
 * runtime, and the real router in this process. (A scripted HTTP/2 server that answers HTTP but
 * not gRPC, and Start streams cut short: grpc-scripted.test.ts.)
 */
import { handleFor, runtimeFixture } from './handle';
import { type Harness, putSandbox, recordRequests, routeTo, startLocalRouter } from './router-in-process';
import { freePort } from './runtime-process';
import { SandboxGrpcError } from '../src/errors';

async function failure(promise: Promise<unknown>): Promise<any> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  if (err === undefined) throw new Error('expected the call to fail');
  return err;
}

describe('a port with no gRPC says so, and how to fix it', () => {
  const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);
  const runtimePort = () => Number(new URL(fixture().runtime.url).port);
  const grpcPort = () => Number(new URL(fixture().runtime.grpcUrl!).port);
  const fix = /Fix: the client's grpcPort must be the port the sandbox's runtime serves gRPC on \(the SandboxTemplate's runtime\.grpcPort, the runtime's --grpc-port\); or leave grpcPort unset: run\(\) then uses the runtime's HTTP API$/;
  const direct = (port: number) => handleFor(fixture().runtime.url, { grpcUrl: `http://127.0.0.1:${port}` });

  test('straight to the Pod, nothing listening: connection refused', async () => {
    const err = await failure(direct(await freePort()).run('true'));
    expect(err).toBeInstanceOf(SandboxGrpcError);
    expect(err.code).toBe(14);
    expect(err.details).toMatch(/^no gRPC at the sandbox's port \d+: connection refused \(nothing listens there\)\. /);
    expect(err.details).toMatch(fix);
  });

  test('straight to the Pod, the runtime\'s HTTP/1.1 port: not HTTP/2', async () => {
    const err = await failure(direct(runtimePort()).run('true'));
    expect(err.code).toBe(14);
    expect(err.details).toMatch(new RegExp(`^no gRPC at the sandbox's port ${runtimePort()}: the answer was not HTTP/2`));
    expect(err.details).toMatch(fix);
  });

  describe('through the router', () => {
    let h: Harness;
    let seen: string[];
    beforeEach(async () => {
      h = await startLocalRouter();
      seen = recordRequests(h);
      putSandbox(h, 'sb');
    });
    afterEach(async () => h.close());
    const routed = (port: number) => handleFor(`http://127.0.0.1:${h.port}`, { viaRouter: true, headers: routeTo('sb', port), grpcUrl: `http://127.0.0.1:${h.port}` });

    test('nothing listening at the port: the router could not connect', async () => {
      const port = await freePort();
      const err = await failure(routed(port).run('true'));
      expect(err.code).toBe(14);
      expect(err.details).toMatch(new RegExp(`^no gRPC at the sandbox's port ${port}: the router could not connect to it \\(connection refused or unreachable\\) \\(Could not connect to the backend sandbox: sb\\)\\. `));
      expect(err.details).toMatch(fix);
      expect(seen).toEqual(['POST /process.v1.ProcessService/Start']);
    });

    test('the runtime\'s HTTP/1.1 port: the router got no HTTP/2', async () => {
      const err = await failure(routed(runtimePort()).run('true'));
      expect(err.code).toBe(14);
      expect(err.details).toMatch(/the router got no HTTP\/2 from it/);
      expect(err.details).toMatch(fix);
    });

    test('the control: the real gRPC port works, and a gRPC error of the runtime carries no such hint', async () => {
      expect((await routed(grpcPort()).run('echo ok')).stdout).toBe('ok\n');
      const err = await failure(routed(grpcPort()).run('pwd', { cwd: 'no/such/dir' }));
      expect(err).toMatchObject({ code: 5 });
      expect(err.details).toMatch(/config\.cwd: "no\/such\/dir" does not exist/);
      expect(err.details).not.toMatch(/Fix:/);
    });
  });
});
