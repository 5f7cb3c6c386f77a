import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeClock } from './fake-clock';
import {
  Obtained, RefreshingCredentials, RequestAuth, StaticCredentials, execConfigProblem, parseExecCredential, runExecPlugin, tokenFileCredentials,
} from '../../src/runtime/credentials';

const bearer = (token: string): RequestAuth => ({ headers: { authorization: `Bearer ${token}` } });

/** An obtain() that hands out token-1, token-2, ... with the expiry `expiresIn` ms after the clock's now. */
function counting(clock: FakeClock, expiresIn?: number) {
  const state = { calls: 0 };
  const obtain = async (): Promise<Obtained> => {
    state.calls++;
    return { auth: bearer(`token-${state.calls}`), expiresAt: expiresIn === undefined ? undefined : clock.now() + expiresIn };
  };
  return { state, obtain };
}

describe('RefreshingCredentials', () => {
  test('cached until the credential expires, then obtained again', async () => {
    const clock = new FakeClock();
    const { state, obtain } = counting(clock, 5_000);
    const creds = new RefreshingCredentials(obtain, { clock });
    expect(await creds.current()).toEqual(bearer('token-1'));
    clock.advance(4_999);
    expect(await creds.current()).toEqual(bearer('token-1'));
    clock.advance(1);
    expect(await creds.current()).toEqual(bearer('token-2'));
    expect(state.calls).toBe(2);
  });

  test('without an expiry: kept until a 401 says otherwise', async () => {
    const clock = new FakeClock();
    const { state, obtain } = counting(clock);
    const creds = new RefreshingCredentials(obtain, { clock });
    const first = await creds.current();
    clock.advance(24 * 3600_000);
    expect(await creds.current()).toBe(first);
    expect(creds.rejected(first)).toBe(true);
    expect(await creds.current()).toEqual(bearer('token-2'));
    expect(state.calls).toBe(2);
  });

  test('a 401 for credentials already replaced does not throw away the new ones', async () => {
    const clock = new FakeClock();
    const { state, obtain } = counting(clock);
    const creds = new RefreshingCredentials(obtain, { clock });
    const old = await creds.current();
    creds.rejected(old);
    const fresh = await creds.current();
    // A second request that carried the old credentials comes back 401 late.
    expect(creds.rejected(old)).toBe(true);
    expect(await creds.current()).toBe(fresh);
    expect(state.calls).toBe(2);
  });

  test('maxAgeMs bounds the cache even when the credential says it lives longer', async () => {
    const clock = new FakeClock();
    const { obtain } = counting(clock, 3600_000);
    const creds = new RefreshingCredentials(obtain, { clock, maxAgeMs: 60_000 });
    await creds.current();
    clock.advance(60_000);
    expect(await creds.current()).toEqual(bearer('token-2'));
  });

  test('concurrent requests share one refresh', async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const creds = new RefreshingCredentials(async () => {
      calls++;
      await gate;
      return { auth: bearer('shared') };
    });
    const all = Promise.all([creds.current(), creds.current(), creds.current()]);
    release();
    expect(await all).toEqual([bearer('shared'), bearer('shared'), bearer('shared')]);
    expect(calls).toBe(1);
  });

  test('a failed refresh fails the request, and the next request tries again', async () => {
    let calls = 0;
    const creds = new RefreshingCredentials(async () => {
      calls++;
      if (calls === 1) throw new Error('plugin exited with code 1');
      return { auth: bearer('ok') };
    });
    await expect(creds.current()).rejects.toThrow(/plugin exited with code 1/);
    expect(await creds.current()).toEqual(bearer('ok'));
  });

  test('with onRefreshError, a failed refresh keeps the last credentials for another maxAgeMs', async () => {
    const clock = new FakeClock();
    const errors: string[] = [];
    let fail = false;
    const creds = new RefreshingCredentials(async () => {
      if (fail) throw new Error('rotating');
      return { auth: bearer('last') };
    }, { clock, maxAgeMs: 1000, onRefreshError: (err) => errors.push(err.message) });
    await creds.current();
    fail = true;
    clock.advance(1000);
    expect(await creds.current()).toEqual(bearer('last'));
    clock.advance(500);
    expect(await creds.current()).toEqual(bearer('last'));
    expect(errors).toEqual(['rotating']);
  });
});

test('StaticCredentials: the same every time, and a 401 is not worth a retry', async () => {
  const creds = new StaticCredentials(bearer('fixed'));
  const auth = await creds.current();
  expect(auth).toEqual(bearer('fixed'));
  expect(creds.rejected(auth)).toBe(false);
});

test('a token file is re-read after a minute; a failed re-read keeps the last token', async () => {
  const clock = new FakeClock();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'token-file-'));
  const file = path.join(dir, 'token');
  fs.writeFileSync(file, 'one\n');
  const warnings: string[] = [];
  const creds = tokenFileCredentials(file, (err) => warnings.push(err.message), clock, { headers: { 'impersonate-user': 'jane' } });
  expect(await creds.current()).toEqual({ headers: { 'impersonate-user': 'jane', 'authorization': 'Bearer one' } });
  fs.writeFileSync(file, 'two');
  expect((await creds.current()).headers.authorization).toBe('Bearer one');
  clock.advance(60_000);
  expect((await creds.current()).headers.authorization).toBe('Bearer two');
  fs.rmSync(file);
  clock.advance(60_000);
  expect((await creds.current()).headers.authorization).toBe('Bearer two');
  expect(warnings).toEqual([expect.stringMatching(/cannot read the bearer token file .*token/)]);
});

describe('ExecCredential', () => {
  const V1 = 'client.authentication.k8s.io/v1';
  const what = 'the plugin';

  test('a token and its expiry', () => {
    const text = JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { token: 't', expirationTimestamp: '2030-01-02T03:04:05Z' } });
    expect(parseExecCredential(text, V1, what)).toEqual({ auth: bearer('t'), expiresAt: Date.parse('2030-01-02T03:04:05Z') });
  });

  test('a client certificate, no expiry', () => {
    const text = JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { clientCertificateData: 'CERT', clientKeyData: 'KEY' } });
    expect(parseExecCredential(text, V1, what)).toEqual({ auth: { headers: {}, cert: 'CERT', key: 'KEY' }, expiresAt: undefined });
  });

  test.each([
    ['not json', /printed no ExecCredential JSON/],
    [JSON.stringify({ apiVersion: V1, kind: 'Other' }), /printed kind "Other", not ExecCredential/],
    [JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: 't' } }),
      /answered with apiVersion "client.authentication.k8s.io\/v1beta1", but the kubeconfig asks for client.authentication.k8s.io\/v1/],
    [JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: {} }), /neither status.token nor a client certificate/],
    [JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { clientKeyData: 'K' } }), /only one of status.clientCertificateData and status.clientKeyData/],
    [JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { token: 't', expirationTimestamp: 'soon' } }), /"soon", which is not an RFC 3339 time/],
  ])('bad output is an error naming the field: %s', (text, message) => {
    expect(() => parseExecCredential(text, V1, what)).toThrow(message);
  });

  test.each([
    [{ apiVersion: V1 }, /exec\.command is empty/],
    [{ command: 'x' }, /exec\.apiVersion is not set: set it to client.authentication.k8s.io\/v1/],
    [{ command: 'x', apiVersion: 'client.authentication.k8s.io/v1alpha1' }, /"client.authentication.k8s.io\/v1alpha1", which the operator does not read/],
    [{ command: 'x', apiVersion: V1, interactiveMode: 'Always' }, /exec\.interactiveMode is Always, but the operator runs without a terminal: set it to IfAvailable or Never/],
  ])('configs the operator cannot run: %j', (exec, message) => {
    expect(execConfigProblem(exec, 'users[name="u"].user.exec')).toMatch(message);
  });

  test('configs it can run', () => {
    expect(execConfigProblem({ command: 'x', apiVersion: V1, interactiveMode: 'IfAvailable' }, 'f')).toBeUndefined();
    expect(execConfigProblem({ command: 'x', apiVersion: 'client.authentication.k8s.io/v1beta1' }, 'f')).toBeUndefined();
  });
});

describe('runExecPlugin', () => {
  const V1 = 'client.authentication.k8s.io/v1';
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-plugin-'));
  });

  function script(body: string): string {
    const file = path.join(dir, 'plugin.js');
    fs.writeFileSync(file, body);
    return file;
  }

  test('runs with args, env and KUBERNETES_EXEC_INFO; no stdin', async () => {
    const plugin = script(`
      process.stdout.write(JSON.stringify({ apiVersion: '${V1}', kind: 'ExecCredential', status: {
        token: [process.argv[2], process.env.EXTRA, process.env.KUBERNETES_EXEC_INFO, String(process.stdin.isTTY)].join('|'),
      } }));`);
    const obtained = await runExecPlugin({ command: process.execPath, args: [plugin, 'arg'], env: [{ name: 'EXTRA', value: 'env' }], apiVersion: V1, provideClusterInfo: true },
      { where: 'test', cluster: { 'server': 'https://x:6443', 'certificate-authority-data': 'Q0E=' } });
    const [arg, extra, info] = obtained.auth.headers.authorization.replace('Bearer ', '').split('|');
    expect([arg, extra]).toEqual(['arg', 'env']);
    expect(JSON.parse(info)).toEqual({
      apiVersion: V1, kind: 'ExecCredential', spec: { interactive: false, cluster: { 'server': 'https://x:6443', 'certificate-authority-data': 'Q0E=' } },
    });
  });

  test('the cluster is passed only with provideClusterInfo', async () => {
    const plugin = script(`process.stdout.write(JSON.stringify({ apiVersion: '${V1}', kind: 'ExecCredential', status: { token: process.env.KUBERNETES_EXEC_INFO } }));`);
    const obtained = await runExecPlugin({ command: process.execPath, args: [plugin], apiVersion: V1 }, { where: 'test', cluster: { server: 'https://x' } });
    expect(JSON.parse(obtained.auth.headers.authorization.replace('Bearer ', ''))).toEqual({ apiVersion: V1, kind: 'ExecCredential', spec: { interactive: false } });
  });

  test('a failing plugin: its exit code and stderr', async () => {
    const plugin = script('process.stderr.write("login expired: run gcloud auth login\\n"); process.exit(3);');
    await expect(runExecPlugin({ command: process.execPath, args: [plugin], apiVersion: V1 }, { where: 'kubeconfig k (user u)' }))
      .rejects.toThrow(/exec credential plugin ".*" of kubeconfig k \(user u\) exited with code 3: login expired: run gcloud auth login/);
  });

  test('a missing plugin: not found, with the kubeconfig\'s installHint', async () => {
    await expect(runExecPlugin({ command: 'no-such-credential-plugin', apiVersion: V1, installHint: 'Install it with: apt-get install no-such' }, { where: 'k' }))
      .rejects.toThrow(/could not start: .*ENOENT.* \(not found on PATH; Install it with: apt-get install no-such\)/);
  });

  test('a plugin that never answers is killed', async () => {
    const plugin = script('setTimeout(() => {}, 60000);');
    await expect(runExecPlugin({ command: process.execPath, args: [plugin], apiVersion: V1 }, { where: 'k', timeoutMs: 300 }))
      .rejects.toThrow(/gave no credential within 0.3 s and was killed/);
  });
});
