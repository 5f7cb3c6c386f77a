/**
 * The claim object the SDK sends, and the clear errors for bad options (each names its field).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildClaim, SandboxClient } from '../src/client';
import { Connector } from '../src/connection';
import { durationMs } from '../src/duration';
import { SandboxConfigError } from '../src/errors';

const NOW = Date.parse('2026-12-01T10:00:00.000Z');

describe('buildClaim', () => {
  test('a claim from a pool, with labels, a ttl that deletes it, and the SDK\'s marks', () => {
    const claim = buildClaim({ pool: 'python-pool', ttl: '15m', labels: { 'team': 'a', 'example.com/run': 'r-1' }, name: 'my-claim' }, 'agents', NOW);
    expect(claim).toEqual({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: {
        name: 'my-claim',
        namespace: 'agents',
        labels: { 'team': 'a', 'example.com/run': 'r-1', 'agents.x-k8s.io/created-by': 'typescript-client' },
        annotations: { 'agents.x-k8s.io/client-first-requested-at': '2026-12-01T10:00:00.000Z' },
      },
      spec: { warmPoolRef: { name: 'python-pool' }, lifecycle: { shutdownTime: '2026-12-01T10:15:00Z', shutdownPolicy: 'Delete' } },
    });
  });

  test('a generated name, and no lifecycle without a ttl', () => {
    const claim = buildClaim({ pool: 'p' }, 'default', NOW);
    expect(claim.metadata.name).toMatch(/^sandbox-claim-[0-9a-f]{8}$/);
    expect(claim.spec.lifecycle).toBeUndefined();
  });

  test.each([
    [{ pool: '' }, 'pool'],
    [{ pool: 'Bad_Pool' }, 'pool'],
    [{ pool: 'p', name: 'UPPER' }, 'name'],
    [{ pool: 'p', labels: { 'agents.x-k8s.io/created-by': 'me' } }, 'labels.agents.x-k8s.io/created-by'],
    [{ pool: 'p', labels: { team: 'has space' } }, 'labels.team'],
    [{ pool: 'p', ttl: 'soon' }, 'ttl'],
    [{ pool: 'p', ttl: -5 }, 'ttl'],
    [{ pool: 'p', timeoutMs: 0 }, 'timeoutMs'],
    [{ pool: 'p', coldStart: 'maybe' as 'wait' }, 'coldStart'],
  ])('%j is refused naming %s', (options, field) => {
    let err: unknown;
    try {
      buildClaim(options, 'default', NOW);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SandboxConfigError);
    expect((err as SandboxConfigError).field).toBe(field);
  });

  test('an idle policy renders spec.idlePolicy in whole seconds, resumeOnRequest true unless said otherwise', () => {
    expect(buildClaim({ pool: 'p', idlePolicy: { suspendAfter: '10m' } }, 'default', NOW).spec.idlePolicy).toEqual({ suspendAfterSeconds: 600, resumeOnRequest: true });
    expect(buildClaim({ pool: 'p', idlePolicy: { suspendAfter: 90, resumeOnRequest: false } }, 'default', NOW).spec.idlePolicy).toEqual({ suspendAfterSeconds: 90, resumeOnRequest: false });
    expect(buildClaim({ pool: 'p', idlePolicy: { suspendAfter: '1h1s' } }, 'default', NOW).spec.idlePolicy).toEqual({ suspendAfterSeconds: 3601, resumeOnRequest: true });
    // Negative control: no idlePolicy, no spec.idlePolicy (the template's applies).
    expect(buildClaim({ pool: 'p' }, 'default', NOW).spec).not.toHaveProperty('idlePolicy');
  });

  test.each([
    [{ suspendAfter: '1500ms' }, 'idlePolicy.suspendAfter', /^idlePolicy\.suspendAfter: must be whole seconds from 1s to 2147483647s .*got "1500ms"; e\.g\. "90s"/],
    [{ suspendAfter: '500ms' }, 'idlePolicy.suspendAfter', /must be whole seconds/],
    [{ suspendAfter: 0.5 }, 'idlePolicy.suspendAfter', /must be whole seconds/],
    [{ suspendAfter: 2_147_483_648 }, 'idlePolicy.suspendAfter', /must be whole seconds from 1s to 2147483647s/],
    [{ suspendAfter: 0 }, 'idlePolicy.suspendAfter', /must be a positive number of seconds/],
    [{ suspendAfter: 'idle' }, 'idlePolicy.suspendAfter', /must be a number of seconds or a string like/],
    [{}, 'idlePolicy.suspendAfter', /is required: how long the sandbox may go unused/],
    [{ suspendAfterSeconds: 60 }, 'idlePolicy.suspendAfterSeconds', /the API's name; the SDK takes suspendAfter/],
    [{ suspendAfter: '1m', resumeOnRequest: 'yes' }, 'idlePolicy.resumeOnRequest', /must be true or false, got "yes"/],
    ['10m', 'idlePolicy', /must be an object like \{ suspendAfter: "10m" \}/],
  ])('idlePolicy %j is refused naming %s', (idlePolicy, field, message) => {
    let err: unknown;
    try {
      buildClaim({ pool: 'p', idlePolicy: idlePolicy as any }, 'default', NOW);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SandboxConfigError);
    expect((err as SandboxConfigError).field).toBe(field);
    expect((err as Error).message).toMatch(message);
  });

  test('a bad namespace is refused', () => {
    expect(() => buildClaim({ pool: 'p' }, 'Not A Namespace', NOW)).toThrow(/^namespace: /);
  });
});

describe('credentials', () => {
  test('a kubeconfig file that cannot be read, or none at all, is a SandboxConfigError naming kubeconfig', () => {
    expect(() => new SandboxClient({ kubeconfig: '/nonexistent/kubeconfig' })).toThrow(/^kubeconfig: cannot load \/nonexistent\/kubeconfig/);
    const saved = { KUBECONFIG: process.env.KUBECONFIG, HOME: process.env.HOME };
    try {
      delete process.env.KUBECONFIG;
      process.env.HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-home-'));
      expect(() => new SandboxClient()).toThrow(/^kubeconfig: no Kubernetes credentials found/);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  test('an object that is not a loaded KubeConfig is a SandboxConfigError naming kubeconfig (not silently the default)', () => {
    expect(() => new SandboxClient({ kubeconfig: { getCurrentCluster: () => null } as any })).toThrow(/^kubeconfig: must be a kubeconfig file path or a loaded KubeConfig/);
  });

  test('a KubeConfig is taken by its methods, so one from another copy of client-node works', async () => {
    // Not an instance of the SDK's client-node KubeConfig: only the three methods the SDK calls.
    const called = new Set<string>();
    const kubeconfig = {
      getCurrentCluster: () => (called.add('getCurrentCluster'), { server: 'https://127.0.0.1:1' }),
      applyToHTTPSOptions: async () => void called.add('applyToHTTPSOptions'),
      applyToFetchOptions: async () => (called.add('applyToFetchOptions'), {}),
    };
    const client = new SandboxClient({ kubeconfig, token: null, cleanupOnSignal: false });
    await expect(client.connect({ claim: 'c', namespace: 'ns', timeoutMs: 1_000 })).rejects.toThrow();
    expect(called).toContain('getCurrentCluster');
  });
});

describe('durations', () => {
  test('seconds or unit strings', () => {
    expect(durationMs(90, 'ttl')).toBe(90_000);
    expect(durationMs('1h30m', 'ttl')).toBe(5_400_000);
    expect(durationMs('250ms', 'ttl')).toBe(250);
    expect(() => durationMs('10 minutes', 'ttl')).toThrow(/ttl: must be a number of seconds or a string like/);
  });
});

describe('connection', () => {
  const token = async () => undefined;
  test.each([
    [{ mode: 'tunnel' }, 'connection.mode'],
    [{ mode: 'direct', url: 'not a url' }, 'connection.url'],
    [{ mode: 'direct', url: 'ftp://127.0.0.1' }, 'connection.url'],
    [{ mode: 'direct', url: 'http://127.0.0.1:8080', headers: { 'X-Sandbox-ID': 'x' } }, 'connection.headers.X-Sandbox-ID'],
    [{ mode: 'port-forward' }, 'connection'],
  ])('%j is refused naming %s', (connection, field) => {
    let err: unknown;
    try {
      new Connector(connection as never, undefined, token);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SandboxConfigError);
    expect((err as SandboxConfigError).field).toBe(field);
  });

  test('direct: the router\'s URL with upstream\'s routing headers and the bearer token', async () => {
    const connector = new Connector({ mode: 'direct', url: 'http://127.0.0.1:8080/', headers: { 'x-team': 'a' } }, undefined, async () => 't0k');
    expect(await connector.endpoint({ name: 'sb-1', namespace: 'ns' })).toEqual({
      baseUrl: 'http://127.0.0.1:8080',
      headers: { 'x-team': 'a', 'X-Sandbox-ID': 'sb-1', 'X-Sandbox-Namespace': 'ns', 'X-Sandbox-Port': '8888', 'authorization': 'Bearer t0k' },
      viaRouter: true,
    });
  });

  test('pod: the Pod\'s IPv4 address, no routing headers; in-cluster: the router Service\'s DNS name', async () => {
    const pod = new Connector({ mode: 'pod' }, undefined, token);
    expect(await pod.endpoint({ name: 'sb', namespace: 'ns', podIPs: ['fd00::1', '::ffff:127.64.0.9'] })).toEqual({ baseUrl: 'http://127.64.0.9:8888', headers: {}, viaRouter: false });
    await expect(pod.endpoint({ name: 'sb', namespace: 'ns' })).rejects.toThrow(/has no Pod IP yet/);
    const inCluster = new Connector({ mode: 'in-cluster' }, undefined, token);
    expect((await inCluster.endpoint({ name: 'sb', namespace: 'ns' })).baseUrl).toBe('http://sandbox-router-svc.agent-sandbox-system.svc.cluster.local:8080');
  });
});
