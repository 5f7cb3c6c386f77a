/**
 * Property tests of the router's request addressing: whatever headers or path a client sends, the
 * result is either one of upstream's 400 texts or a target whose every field is valid, and the
 * path form `<prefix>/<namespace>/<id>/<port>/...` gives back exactly the bytes after the port.
 */
import { isIP } from 'node:net';
import fc from 'fast-check';
import { isDns1123Label, parseTarget, type AddressError, type Target } from '../../src/router/addressing';

const PREFIX = '/router';
const ERRORS = [
  'X-Sandbox-ID header is required.',
  'Invalid sandbox ID format.',
  'Invalid namespace format.',
  'Invalid port format.',
  'Invalid target IP address.',
  `Path-routed request must have the form ${PREFIX}/<namespace>/<id>/<port>/...`,
  'Invalid percent-encoding in path.',
];

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
/** Header values: arbitrary text, or something close to valid. */
const value = fc.option(fc.oneof(fc.string({ maxLength: 20 }), label, fc.integer({ min: -5, max: 70000 }).map(String), fc.constantFrom('10.0.0.1', 'fd00::1', '1.5', 'Infinity')), { nil: undefined });
const url = fc.tuple(fc.webPath(), fc.option(fc.webQueryParameters(), { nil: undefined })).map(([p, q]) => `${p || '/'}${q === undefined ? '' : `?${q}`}`);

function checkTarget(result: Target | AddressError): Target | undefined {
  if ('status' in result) {
    expect(result.status).toBe(400);
    expect(ERRORS).toContain(result.detail);
    return undefined;
  }
  expect(isDns1123Label(result.namespace) && isDns1123Label(result.id)).toBe(true);
  expect(Number.isInteger(result.port) && result.port >= 1 && result.port <= 65535).toBe(true);
  if (result.podIP !== undefined) expect(isIP(result.podIP)).not.toBe(0);
  if (result.timeoutMs !== undefined) expect(Number.isFinite(result.timeoutMs) && result.timeoutMs > 0).toBe(true);
  return result;
}

test('headers: any values give an upstream 400 or a fully valid target with the URL unchanged', () => {
  const headers = fc.record({
    'x-sandbox-id': value, 'x-sandbox-namespace': value, 'x-sandbox-port': value, 'x-sandbox-pod-ip': value, 'x-sandbox-timeout': value,
  });
  fc.assert(fc.property(url, headers, fc.constantFrom('', PREFIX), (target, sent, prefix) => {
    const present = Object.fromEntries(Object.entries(sent).filter(([, v]) => v !== undefined));
    const result = checkTarget(parseTarget(target, present, prefix));
    if (result) expect(result.path).toBe(target);
  }));
});

test('headers: an empty X-Sandbox-Pod-IP is absent, like every other empty X-Sandbox-* header', () => {
  expect(parseTarget('/', { 'x-sandbox-id': 'sb', 'x-sandbox-pod-ip': '' }, '')).toMatchObject({ id: 'sb', podIP: undefined });
});

/** A character as the path may carry it: itself, or percent-escaped in either hex case. */
const escaped = (c: string) => fc.constantFrom(c, `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`, `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
const spelled = (text: string) => fc.tuple(...[...text].map(escaped)).map((parts) => parts.join(''));

test('path: escaped identities decode to themselves; the rest and query are kept byte for byte', () => {
  const request = fc.tuple(label, label, fc.integer({ min: 1, max: 65535 })).chain(([ns, id, port]) => fc.record({
    ns: fc.constant(ns),
    id: fc.constant(id),
    port: fc.constant(port),
    raw: fc.tuple(spelled(ns), spelled(id), spelled(String(port))),
    rest: fc.option(fc.webPath(), { nil: undefined }),
    query: fc.option(fc.webQueryParameters(), { nil: undefined }),
  }));
  fc.assert(fc.property(request, ({ ns, id, port, raw, rest, query }) => {
    const q = query === undefined ? '' : `?${query}`;
    const result = parseTarget(`${PREFIX}/${raw.join('/')}${rest ?? ''}${q}`, { 'x-sandbox-id': 'ignored', 'x-sandbox-port': '1' }, PREFIX);
    expect(result).toEqual({ namespace: ns, id, port, path: `${rest || '/'}${q}` });
  }));
});

test('path: any text after the prefix gives an upstream 400 or a valid target whose path is what follows the port', () => {
  const segment = fc.oneof(label, fc.string({ maxLength: 8 }), fc.constantFrom('', '..', '%2F', '%zz', '%E0%A4', '80', '65536'));
  fc.assert(fc.property(fc.array(segment, { maxLength: 6 }), (segments) => {
    const rawPath = `${PREFIX}/${segments.join('/')}`.replace(/[?#]/g, '_');
    const result = checkTarget(parseTarget(rawPath, {}, PREFIX));
    if (!result) return;
    const head = rawPath.split('/').slice(0, 5).join('/');
    expect(`${head}${result.path === '/' && rawPath === head ? '' : result.path}`).toBe(rawPath);
  }));
});

test('path: a separator escaped into the sandbox ID is refused, never split', () => {
  fc.assert(fc.property(label, label, (a, b) => {
    expect(parseTarget(`${PREFIX}/ns/${a}%2F${b}/80/`, {}, PREFIX)).toEqual({ status: 400, detail: 'Invalid sandbox ID format.' });
  }));
});
