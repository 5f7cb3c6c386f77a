/**
 * `claim()` around the create, against a scripted Kubernetes API server on 127.0.0.1: the claim is
 * registered for cleanup on SIGINT/SIGTERM before the create is sent, the caller's signal ends the
 * create, and a create whose answer is lost is followed by a best-effort delete of the name the SDK
 * made up.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { pendingCleanups } from '../src/cleanup';
import { SandboxClient } from '../src/client';
import { KubeApi } from '../src/kube';
import { CLAIMS } from '../src/wire';

interface Request {
  readonly method: string;
  readonly url: string;
  readonly body: string;
}

let server: http.Server;
let requests: Request[];
let onCreate: (res: http.ServerResponse) => void;
let created: () => void;

beforeEach(async () => {
  requests = [];
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, body });
      if (req.method === 'POST') {
        created();
        onCreate(res);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(): SandboxClient {
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return new SandboxClient({ kubeconfig, token: null });
}

const posted = () => new Promise<void>((resolve) => (created = resolve));

test('during the create the claim is already registered for cleanup, and the signal ends the create', async () => {
  onCreate = () => undefined; // never answers
  const sent = posted();
  const before = pendingCleanups();
  const controller = new AbortController();
  const pending = client().claim({ pool: 'pool', signal: controller.signal });
  pending.catch(() => undefined);
  await sent;
  expect(pendingCleanups()).toBe(before + 1);
  controller.abort(new Error('agent gave up'));
  await expect(pending).rejects.toThrow('agent gave up');
  expect(pendingCleanups()).toBe(before);
}, 10_000);

test('a create whose answer is lost is followed by a delete of the made-up name (without a uid)', async () => {
  onCreate = (res) => res.socket!.destroy();
  const sent = posted();
  await expect(client().claim({ pool: 'pool' })).rejects.toThrow();
  await sent;
  const name = JSON.parse(requests[0].body).metadata.name as string;
  expect(name).toMatch(/^sandbox-claim-/);
  expect(requests.slice(1)).toEqual([{ method: 'DELETE', url: KubeApi.path(CLAIMS, 'default', name), body: '' }]);
}, 10_000);

test('a lost answer to a create of a name the caller chose deletes nothing', async () => {
  onCreate = (res) => res.socket!.destroy();
  await expect(client().claim({ pool: 'pool', name: 'mine' })).rejects.toThrow();
  expect(requests.map((r) => r.method)).toEqual(['POST']);
}, 10_000);
