/**
 * --access-log: off (the default), a served request writes no log line and a failure still writes
 * one carrying the request id; on, every request writes one line.
 */
import { echoHandler, pod, request, sandbox, startRouter, startUpstream, UPSTREAM_IP } from './harness';
import type { Logger } from '../../src/runtime/log';

interface Line { level: string; bindings: Record<string, unknown>; fields: Record<string, unknown>; message?: string }

function capturing(lines: Line[], bindings: Record<string, unknown> = {}): Logger {
  const at = (level: string) => (a: unknown, b?: unknown) => {
    lines.push(typeof a === 'string' ? { level, bindings, fields: {}, message: a } : { level, bindings, fields: a as Record<string, unknown>, message: b as string | undefined });
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => capturing(lines, { ...bindings, ...more }) };
}

describe('the router access log', () => {
  for (const accessLog of [false, true]) {
    test(`--access-log=${accessLog}: ${accessLog ? 'a line per request' : 'no line for a served request'}; a failure is logged with its request id either way`, async () => {
      const lines: Line[] = [];
      const upstream = await startUpstream(echoHandler);
      const h = await startRouter({ log: capturing(lines), accessLog });
      try {
        const sb = sandbox('sb');
        h.sandboxes.put(sb);
        h.pods.put(pod(sb, [UPSTREAM_IP]));
        const ok = await request(h.port, '/x', { 'x-sandbox-id': 'sb', 'x-sandbox-port': String(upstream.port), 'x-request-id': 'rid-ok' });
        expect(ok.status).toBe(200);
        // Port 1 on the sandbox's address: nothing listens, the dial is refused (after the retries).
        const failed = await request(h.port, '/x', { 'x-sandbox-id': 'sb', 'x-sandbox-port': '1', 'x-request-id': 'rid-bad' });
        expect(failed.status).toBe(502);
        const requestLines = lines.filter((l) => l.message === 'request');
        if (accessLog) {
          expect(requestLines.map((l) => [l.bindings.requestId, l.fields.status])).toEqual([['rid-ok', 200], ['rid-bad', 502]]);
        } else {
          expect(requestLines).toEqual([]);
        }
        expect(lines.filter((l) => l.message === 'upstream failed').map((l) => l.bindings.requestId)).toEqual(['rid-bad']);
      } finally {
        await h.close();
        await upstream.close();
      }
    }, 20_000);
  }
});
