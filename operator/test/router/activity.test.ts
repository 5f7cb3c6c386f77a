import * as http from 'node:http';
import { SandboxAnnotations } from '#api/labels';
import { pod, request, sandbox, startRouter, startUpstream, UPSTREAM_IP } from './harness';
import type { Sandbox } from '../../src/model';
import { ActivityTracker } from '../../src/router/activity';
import { RouterMetrics } from '../../src/router/metrics';
import { processProbe, runningIn } from '../../src/router/process-probe';
import type { Logger } from '../../src/runtime/log';
import { FakeStore } from '../fake-kube';
import { FakeClock } from '../runtime/fake-clock';

/** When every harness Sandbox turned Ready (whole seconds: the idle clock reads T0 + 999 ms), until a stamp. */
const T0 = Date.parse('2026-01-01T00:00:00Z');
/** suspendAfterSeconds 8: stamps every 2 s (a quarter), deadline 8 s after the newest activity. */
const PERIOD_S = 8;
const INTERVAL = 2000;

function idle(name: string, opts: { lastActivity?: number; policy?: boolean; suspended?: boolean; ready?: boolean } = {}): Sandbox {
  const sb = sandbox(name, { suspended: opts.suspended, ready: opts.ready });
  if (opts.policy !== false) sb.spec.idlePolicy = { suspendAfterSeconds: PERIOD_S };
  if (opts.lastActivity !== undefined) sb.metadata.annotations = { [SandboxAnnotations.LAST_ACTIVITY]: new Date(opts.lastActivity).toISOString() };
  return sb;
}

/** The API server's side of stamps: every patch recorded; answered at once, never, or with a failure. */
class Writes {
  public readonly calls: Array<{ name: string; stamp: string; body: any }> = [];
  public mode: 'ok' | 'hang' | 'fail' = 'ok';
  private readonly hung: Array<() => void> = [];

  public readonly patch = (_type: unknown, _ns: string | undefined, name: string, patchType: string, body: any): Promise<any> => {
    expect(patchType).toBe('merge');
    this.calls.push({ name, stamp: body.metadata.annotations[SandboxAnnotations.LAST_ACTIVITY], body });
    if (this.mode === 'fail') return Promise.reject(new Error('the API server is down'));
    if (this.mode === 'hang') return new Promise((resolve) => this.hung.push(() => resolve({})));
    return Promise.resolve({});
  };

  public answerHung(): void {
    this.hung.splice(0).forEach((answer) => answer());
  }

  public stampsOf(name: string): number[] {
    return this.calls.filter((c) => c.name === name).map((c) => Date.parse(c.stamp));
  }
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

function recordingLogger(lines: Array<{ level: string; msg: string }>): Logger {
  const at = (level: string) => (_obj: unknown, msg?: string) => void lines.push({ level, msg: msg ?? '' });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return log;
}

describe('activity stamps', () => {
  let clock: FakeClock;
  let store: FakeStore<Sandbox>;
  let writes: Writes;
  let metrics: RouterMetrics;
  let logLines: Array<{ level: string; msg: string }>;
  let probes: string[];
  let probeAnswer: boolean;
  let tracker: ActivityTracker;

  function makeTracker(withProbe: boolean): ActivityTracker {
    tracker = new ActivityTracker({
      sandboxes: store,
      client: writes,
      log: recordingLogger(logLines),
      metrics,
      clock,
      probe: withProbe ? async (sb) => {
        probes.push(`${sb.metadata.name}@${clock.now() - T0}`);
        return probeAnswer;
      } : undefined,
    });
    return tracker;
  }

  beforeEach(() => {
    clock = new FakeClock(T0);
    store = new FakeStore<Sandbox>();
    writes = new Writes();
    metrics = new RouterMetrics(undefined, false);
    logLines = [];
    probes = [];
    probeAnswer = false;
  });

  afterEach(() => tracker?.stop());

  test('a request stamps only when the newest stamp (the cache\'s or this router\'s own) is older than the interval', async () => {
    makeTracker(false);
    store.put(idle('sb', { lastActivity: T0 + 500 }), idle('plain', { policy: false }), idle('asleep', { suspended: true }));
    clock.advance(1000);
    tracker.track('default', 'sb', () => undefined)();
    expect(writes.calls).toEqual([]);
    clock.advance(2000);
    const releases = [tracker.track('default', 'sb', () => undefined)];
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000]);
    expect(writes.calls[0].body).toEqual({ metadata: { annotations: { [SandboxAnnotations.LAST_ACTIVITY]: new Date(T0 + 3000).toISOString() } } });
    // The cache does not show that stamp yet; this router's own memory of it coalesces the next requests.
    for (let i = 0; i < 5; i++) {
      clock.advance(300);
      releases.push(tracker.track('default', 'sb', () => undefined));
    }
    releases.forEach((release) => release());
    await flush();
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000]);
    // Another router's newer stamp in the cache counts too.
    store.put(idle('sb', { lastActivity: T0 + 5500 }));
    clock.advance(6000 - 4500);
    tracker.track('default', 'sb', () => undefined)();
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000]);
    // Controls: no policy, or suspended, is never stamped, however stale.
    tracker.track('default', 'plain', () => undefined)();
    tracker.track('default', 'asleep', () => undefined)();
    expect(writes.calls.map((c) => c.name)).toEqual(['sb']);
    expect(await metrics.registry.metrics()).toMatch(/sandbox_router_activity_stamps_total\{sandbox_namespace="default",source="request"\} 1/);
  });

  test('one write in flight per sandbox: a slow write is not joined by another, and the next comes an interval after it', async () => {
    makeTracker(false);
    store.put(idle('sb'));
    writes.mode = 'hang';
    clock.advance(3000);
    const release = tracker.track('default', 'sb', () => undefined);
    tracker.track('default', 'sb', () => undefined)();
    clock.advance(INTERVAL * 3);
    await flush();
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000]);
    // Nothing spins while the write hangs: no timer is set until it ends.
    expect(clock.pending).toBe(0);
    writes.mode = 'ok';
    writes.answerHung();
    await flush();
    clock.advance(10);
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000, T0 + 9005]);
    release();
  });

  test('while a connection is open the stamp is renewed every interval; once it closes, no more', async () => {
    const released: string[] = [];
    makeTracker(false);
    store.put(idle('sb'));
    clock.advance(3000);
    const release = tracker.track('default', 'sb', () => released.push('limits'));
    for (let i = 0; i < 5; i++) {
      clock.advance(INTERVAL);
      await flush();
    }
    const stamps = writes.stampsOf('sb');
    expect(stamps.length).toBeGreaterThanOrEqual(5);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i] - stamps[i - 1]).toBeGreaterThanOrEqual(INTERVAL);
    // The stamps keep the deadline ahead of the clock the whole time.
    expect(stamps[stamps.length - 1] + PERIOD_S * 1000).toBeGreaterThan(clock.now() + INTERVAL);
    release();
    release();
    expect(released).toEqual(['limits']);
    expect(tracker.openTo('default', 'sb')).toBe(0);
    clock.advance(INTERVAL * 10);
    await flush();
    expect(writes.stampsOf('sb')).toEqual(stamps);
    expect(await metrics.registry.metrics()).toMatch(/sandbox_router_activity_stamps_total\{sandbox_namespace="default",source="connection"\} [1-9]/);
  });

  test('a failed write is logged at debug and tried again after a quarter interval (at most a second), not a whole one', async () => {
    makeTracker(false);
    store.put(idle('sb'));
    writes.mode = 'fail';
    clock.advance(3000);
    tracker.track('default', 'sb', () => undefined)();
    await flush();
    expect(logLines).toEqual([{ level: 'debug', msg: 'could not stamp last activity; trying again shortly' }]);
    writes.mode = 'ok';
    // Not within the retry delay (INTERVAL / 4 = 500 ms), however many requests come...
    clock.advance(INTERVAL / 4 - 100);
    tracker.track('default', 'sb', () => undefined)();
    expect(writes.calls).toHaveLength(1);
    // ...but at it, not an interval after the failed write.
    clock.advance(100);
    tracker.track('default', 'sb', () => undefined)();
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000, T0 + 3500]);
  });

  test('an open connection whose stamp failed is stamped again by its timer after the retry delay: one lost write does not reach the deadline', async () => {
    makeTracker(false);
    store.put(idle('sb'));
    writes.mode = 'fail';
    clock.advance(3000);
    const release = tracker.track('default', 'sb', () => undefined);
    await flush();
    writes.mode = 'ok';
    clock.advance(INTERVAL / 4 + 10);
    await flush();
    expect(writes.stampsOf('sb')).toEqual([T0 + 3000, T0 + 3505]);
    // A down API server is not hammered: a failing write is retried once per retry delay.
    writes.mode = 'fail';
    clock.advance(INTERVAL);
    await flush();
    for (let i = 0; i < 8; i++) {
      clock.advance(INTERVAL / 8);
      await flush();
    }
    const stamps = writes.stampsOf('sb');
    for (let i = 3; i < stamps.length; i++) expect(stamps[i] - stamps[i - 1]).toBeGreaterThanOrEqual(INTERVAL / 4);
    release();
  });

  test('no connection: the runtime is probed within an interval of the deadline, at most once an interval; a running process stamps', async () => {
    makeTracker(true);
    store.put(idle('sb'), idle('starting', { ready: false }), idle('plain', { policy: false }));
    // Deadline T0 + 8.999 s (Ready at T0 in whole seconds: read as the end of that second): the probe comes 2 s before, not sooner.
    clock.advance(6999 - 100);
    await flush();
    expect(probes).toEqual([]);
    probeAnswer = true;
    clock.advance(200);
    await flush();
    expect(probes).toEqual(['sb@7004']);
    // Stamped as the probe answers (the fake clock has moved on to T0 + 7.099 s by then).
    expect(writes.stampsOf('sb')).toEqual([T0 + 7099]);
    // The watch shows the stamp: the deadline moves to T0 + 15.099 s, the next probe to 2 s before it.
    store.put(idle('sb', { lastActivity: T0 + 7099 }));
    probeAnswer = false;
    clock.advance(13_000 - 7099);
    await flush();
    expect(probes).toEqual(['sb@7004']);
    for (let i = 0; i < 10; i++) {
      clock.advance(INTERVAL);
      await flush();
    }
    // Not stamped without a process; probed again once an interval while it stays Running past its deadline.
    expect(writes.stampsOf('sb')).toEqual([T0 + 7099]);
    expect(probes.length).toBeGreaterThan(2);
    const times = probes.map((p) => Number(p.split('@')[1]));
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(INTERVAL);
    // Controls: a Sandbox not Ready, or without a policy, is never probed.
    expect(probes.every((p) => p.startsWith('sb@'))).toBe(true);
    expect(await metrics.registry.metrics()).toMatch(/sandbox_router_activity_stamps_total\{sandbox_namespace="default",source="process"\} 1/);
  });

  test('an open connection replaces the probe (it stamps for itself); a deleted Sandbox leaves no timer or state', async () => {
    makeTracker(true);
    store.put(idle('sb'));
    clock.advance(3000);
    const release = tracker.track('default', 'sb', () => undefined);
    for (let i = 0; i < 6; i++) {
      clock.advance(INTERVAL);
      await flush();
    }
    expect(probes).toEqual([]);
    expect(writes.stampsOf('sb').length).toBeGreaterThan(3);
    release();
    store.put(idle('other'));
    expect(tracker.size).toBe(2);
    store.remove('default', 'sb');
    store.remove('default', 'other');
    expect(tracker.size).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe('the process probe', () => {
  test('running when sandboxd lists a running process; not for exited ones, a 404, garbage, a silent runtime or an address the guard refuses', async () => {
    let answer: { status: number; body: string } | 'silent' = { status: 200, body: '' };
    const runtime = await startUpstream((req, res) => {
      expect(req.url).toBe('/processes');
      if (answer === 'silent') return;
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    const h = await startRouter();
    try {
      const at = (ip: string) => processProbe({ dial: h.router.dial, resolve: () => ({ ip, sandbox: sandbox('sb'), pod: {} as any }), timeoutMs: 300, port: runtime.port });
      const probe = at(UPSTREAM_IP);
      const processes = (...status: string[]) => JSON.stringify({ processes: status.map((s, i) => ({ id: `p-${i}`, status: s })) });
      answer = { status: 200, body: processes('exited', 'running') };
      expect(await probe(sandbox('sb'))).toBe(true);
      answer = { status: 200, body: processes('exited') };
      expect(await probe(sandbox('sb'))).toBe(false);
      answer = { status: 404, body: '{"detail":"Not Found"}' };
      expect(await probe(sandbox('sb'))).toBe(false);
      answer = 'silent';
      expect(await probe(sandbox('sb'))).toBe(false);
      expect(h.dialed.every((d) => d === `${UPSTREAM_IP}:${runtime.port}`)).toBe(true);
      const dialedBefore = h.dialed.length;
      expect(await at('10.1.2.3')(sandbox('sb'))).toBe(false);
      expect(h.dialed).toHaveLength(dialedBefore);
      const unresolved = processProbe({ dial: h.router.dial, resolve: () => ({ status: 503, detail: 'not ready' }), timeoutMs: 300 });
      expect(await unresolved(sandbox('sb'))).toBe(false);
      expect(h.dialed).toHaveLength(dialedBefore);
    } finally {
      await h.close();
      await runtime.close();
    }
    expect(runningIn('{"processes":[{"status":"running"}]}')).toBe(true);
    for (const body of ['', 'null', '{"processes":{}}', '{"processes":[null]}', '[{"status":"running"}]']) expect(runningIn(body)).toBe(false);
  });
});

describe('the router counts every admitted request as activity', () => {
  test('open while forwarded, released after; a refused request is never counted', async () => {
    let hold: () => void = () => undefined;
    let held = false;
    const upstream = await startUpstream((_req, res) => {
      hold = () => res.end('done');
      held = true;
    });
    const tracked: string[] = [];
    let open = 0;
    const activity = {
      track: (ns: string, id: string, release: () => void) => {
        tracked.push(`${ns}/${id}`);
        open++;
        return () => {
          open--;
          release();
        };
      },
    };
    const h = await startRouter({ activity });
    try {
      const sb = sandbox('sb');
      h.sandboxes.put(sb);
      h.pods.put(pod(sb, [UPSTREAM_IP]));
      const reply = new Promise<number>((resolve) => {
        http.get({ host: '127.0.0.1', port: h.port, path: '/', headers: { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port) }, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
      });
      // The upstream has the request: it was admitted, and is open until the response ends.
      while (!held) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(tracked).toEqual(['default/sb']);
      expect(open).toBe(1);
      hold();
      expect(await reply).toBe(200);
      while (open !== 0) await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await request(h.port, '/', { 'x-sandbox-id': 'missing' })).status).toBe(404);
      expect(tracked).toEqual(['default/sb']);
      expect(h.router.openConnections).toBe(0);
    } finally {
      await h.close();
      await upstream.close();
    }
  });
});
