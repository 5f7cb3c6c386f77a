import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { closeServer, listen, metricsHandler, parseBindAddress, probesHandler } from '../../src/runtime/http';
import { SILENT_LOGGER } from '../../src/runtime/log';
import { OperatorMetrics } from '../../src/runtime/metrics';

function get(server: http.Server, path: string): Promise<{ status: number; body: string; type?: string }> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: res.headers['content-type'] }));
    }).on('error', reject);
  });
}

test.each([
  [':8080', { host: undefined, port: 8080 }],
  ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
  ['[::1]:9', { host: '::1', port: 9 }],
  ['0', undefined],
])('parseBindAddress(%j)', (address, expected) => {
  expect(parseBindAddress(address)).toEqual(expected);
});

test('parseBindAddress rejects an address without a port', () => {
  expect(() => parseBindAddress('localhost')).toThrow(/must be \[host\]:port/);
});

test('probes: /healthz live, /readyz reports why it is not ready, unknown paths 404', async () => {
  let reason: string | undefined = 'informers have not synced yet';
  const server = (await listen('127.0.0.1:0', probesHandler({ liveness: () => undefined, readiness: () => reason }), SILENT_LOGGER, 'health probes'))!;
  expect(await get(server, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
  expect(await get(server, '/readyz')).toMatchObject({ status: 503, body: 'informers have not synced yet\n' });
  reason = undefined;
  expect(await get(server, '/readyz')).toMatchObject({ status: 200 });
  expect((await get(server, '/other')).status).toBe(404);
  await closeServer(server);
});

test('"0" disables an endpoint', async () => {
  expect(await listen('0', () => undefined, SILENT_LOGGER, 'metrics')).toBeUndefined();
});

test('/metrics: controller-runtime names, build info and process metrics in Prometheus text format', async () => {
  const metrics = new OperatorMetrics({ version: 'v1.2.3', gitCommit: 'abc', buildDate: '2026-11-29' });
  metrics.controller('sandbox').reconciled('success', 0.01);
  metrics.workQueue('sandbox').added!();
  metrics.informer('pods').watchRestarted!('stalled');
  metrics.trackInformerSize('pods', () => 42);
  metrics.setLeader('lease', true);
  const server = (await listen('127.0.0.1:0', metricsHandler(metrics.registry), SILENT_LOGGER, 'metrics'))!;
  const res = await get(server, '/metrics');
  expect(res.status).toBe(200);
  expect(res.type).toMatch(/^text\/plain; version=0.0.4/);
  for (const expected of [
    'controller_runtime_reconcile_total{controller="sandbox",result="success"} 1',
    'controller_runtime_reconcile_time_seconds_bucket{le="0.01",controller="sandbox"} 1',
    'workqueue_adds_total{controller="sandbox",name="sandbox"} 1',
    'agent_sandbox_informer_watch_restarts_total{resource="pods",reason="stalled"} 1',
    'agent_sandbox_informer_objects{resource="pods"} 42',
    'leader_election_master_status{name="lease"} 1',
    'agent_sandbox_build_info{git_version="v1.2.3",git_commit="abc",build_date="2026-11-29"',
    'process_resident_memory_bytes',
    'nodejs_eventloop_lag_seconds',
  ]) {
    expect(res.body).toContain(expected);
  }
  expect((await get(server, '/')).status).toBe(404);
  await closeServer(server);
});
