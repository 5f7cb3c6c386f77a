import { FakeClock } from './fake-clock';
import { ScriptedApiServer, json, status } from './scripted-api-server';
import { watchHealth } from '../../src/commands/controller';
import { InformerFactory } from '../../src/runtime/informer-factory';
import { HttpKubeClient } from '../../src/runtime/kube-client';
import { ResourceType } from '../../src/runtime/types';

const CONFIGMAPS: ResourceType = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const SECRETS: ResourceType = { group: '', version: 'v1', resource: 'secrets', namespaced: true };

let server: ScriptedApiServer;
let factory: InformerFactory | undefined;

beforeEach(async () => {
  server = await new ScriptedApiServer().start();
});

afterEach(async () => {
  factory?.stop();
  factory = undefined;
  await server.stop();
});

test('one informer getting through again wakes the others out of their backoff; readiness names the caches that are disconnected', async () => {
  // Both lists fail once; then both work. With a 60 s backoff neither would retry within the test.
  server.failLists = { count: 1, code: 500, reason: 'InternalError' };
  let secretFailures = 1;
  server.onOther = (req, res) => {
    if (!/\/secrets$/.test(req.url.pathname)) return status(res, 404, 'NotFound', 'not scripted');
    if (secretFailures-- > 0) return status(res, 500, 'InternalError', 'scripted secrets failure');
    json(res, 200, { apiVersion: 'v1', kind: 'SecretList', metadata: { resourceVersion: '1' }, items: [] });
  };
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  factory = new InformerFactory(client, { informerDefaults: { backoffInitialMs: 60_000, backoffMaxMs: 60_000, random: () => 0.5 } });
  const configmaps = factory.forResource(CONFIGMAPS);
  const secrets = factory.forResource(SECRETS);
  factory.start();
  const deadline = Date.now() + 3000;
  while (factory.disconnected(0).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  expect(factory.hasSynced).toBe(false);
  expect(factory.disconnected(0).map((d) => d.resource).sort()).toEqual(['configmaps', 'secrets']);
  expect(server.lists).toHaveLength(2); // one failed list each, and no retry yet
  expect(watchHealth(factory)).toBeUndefined(); // not yet 30 s
  expect(factory.disconnected(60_000)).toEqual([]);

  configmaps.wake();
  await configmaps.synced;
  await secrets.synced; // woken by the configmaps informer's recovery, not by its own 60 s backoff
  expect(factory.disconnected(0)).toEqual([]);
});

test('readiness reports a cache whose lists have failed for 30 s, naming it and how long', async () => {
  const clock = new FakeClock();
  server.failLists = { count: 1000, code: 500, reason: 'InternalError' };
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  factory = new InformerFactory(client, { clock });
  factory.forResource(CONFIGMAPS);
  factory.start();
  const deadline = Date.now() + 3000;
  while (factory.disconnected(0).length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  clock.advance(29_000);
  expect(watchHealth(factory)).toBeUndefined();
  clock.advance(2_000);
  expect(watchHealth(factory)).toBe('lists and watches failing: configmaps for 31s');
});

test('a stalled watch restarts its peers\' watches at once (they share the path), from their resourceVersion, without a relist or a backoff', async () => {
  const clock = new FakeClock();
  server.listResourceVersion = 5;
  // Watches open and stay silent (a frozen path). The secrets list is held, so its watch opens 5 s after the configmaps one.
  let releaseSecrets: (() => void) | undefined;
  server.onOther = (req, res) => {
    if (!/\/secrets$/.test(req.url.pathname)) return status(res, 404, 'NotFound', 'not scripted');
    releaseSecrets = () => json(res, 200, { apiVersion: 'v1', kind: 'SecretList', metadata: { resourceVersion: '7' }, items: [] });
  };
  const restarts: string[] = [];
  const client = new HttpKubeClient({ connection: { server: server.url, source: 'test' } });
  factory = new InformerFactory(client, {
    clock,
    // Every watch here is young (under healthyWatchMs): one that stalled itself backs off a minute.
    informerDefaults: {
      watchTimeoutSeconds: 10,
      watchEndGraceMs: 1_000,
      watchdogMs: 600_000,
      healthyWatchMs: 600_000,
      backoffInitialMs: 60_000,
      backoffMaxMs: 60_000,
      random: () => 0,
    },
    metricsFor: (resource) => ({ watchRestarted: (reason) => restarts.push(`${resource} ${reason}`) }),
  });
  factory.forResource(CONFIGMAPS);
  factory.forResource(SECRETS);
  factory.start();
  await server.watchRequest(1); // configmaps, opened at 0 s: stalls at 10 + 1 s
  clock.advance(5_000);
  while (!releaseSecrets) await new Promise((r) => setTimeout(r, 5));
  releaseSecrets();
  await server.watchRequest(2); // secrets, opened at 5 s: its own deadline is 16 s
  clock.advance(6_000);
  // The secrets watch is reopened at once, from its resourceVersion; the configmaps one, which stalled itself, backs off.
  const reopened = await server.watchRequest(3);
  expect(`${reopened.pathname.split('/').pop()}@${reopened.searchParams.get('resourceVersion')}`).toBe('secrets@7');
  expect(restarts.sort()).toEqual(['configmaps stalled', 'secrets peer-stalled']);
  expect(server.lists.filter((r) => /configmaps$/.test(r.url.pathname))).toHaveLength(1);
  // The secrets watch's own old deadline (16 s) restarts nothing: its timer went with it.
  clock.advance(5_500);
  await new Promise((r) => setTimeout(r, 50));
  expect(restarts).toHaveLength(2);
  expect(server.watches).toBe(3);
});
