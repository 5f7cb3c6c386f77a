/**
 * The command line: defaults, every value checked with an error naming the flag, loopback-only
 * HTTP unless --allow-remote (which needs a token), flags of the other transport refused.
 */
import { FlagError, isLoopback, parseFlags } from '../src/flags';

const refused = (argv: string[]): string => {
  try {
    parseFlags(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(FlagError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

test('stdio with the defaults', () => {
  expect(parseFlags(['stdio', '--pool', 'python-pool'])).toEqual({
    mode: 'stdio',
    common: {
      pool: 'python-pool',
      namespace: 'default',
      ttl: '30m',
      idleTimeoutMs: 600_000,
      maxConcurrentCalls: 4,
      maxOutputBytes: 16_384,
      maxTtl: '24h',
      kubeconfig: undefined,
      context: undefined,
      routerUrl: undefined,
      routerToken: false,
      tokenFile: undefined,
      grpcPort: undefined,
    },
  });
});

test('http with every option', () => {
  const config = parseFlags([
    'http', '--pool=p', '--namespace', 'agents', '--ttl', '1h', '--idle-timeout', '0', '--max-concurrent-calls', '2', '--max-output-bytes', '4096',
    '--kubeconfig', '/k', '--context', 'c', '--router-url', 'http://127.0.0.1:8080', '--router-token', '--grpc-port', '9090',
    '--listen', '[::1]:9000', '--allowed-host', 'mcp.local:9000', '--allowed-origin', 'https://app.example.com', '--allowed-origin', 'http://localhost:3000', '--max-sessions', '3',
  ]);
  expect(config).toMatchObject({
    mode: 'http',
    common: { pool: 'p', namespace: 'agents', ttl: '1h', idleTimeoutMs: 0, maxConcurrentCalls: 2, maxOutputBytes: 4096, kubeconfig: '/k', context: 'c', routerUrl: 'http://127.0.0.1:8080', routerToken: true, grpcPort: 9090 },
    http: { host: '::1', port: 9000, allowRemote: false, allowedHosts: ['mcp.local:9000'], allowedOrigins: ['https://app.example.com', 'http://localhost:3000'], maxSessions: 3 },
  });
  expect(parseFlags(['http', '--pool', 'p'])).toMatchObject({ http: { host: '127.0.0.1', port: 8765 } });
  expect(parseFlags(['--help'])).toEqual({ mode: 'help' });
});

test('negative controls: each bad value is refused naming its flag', () => {
  expect(refused([])).toBe('name a transport: "stdio" or "http"');
  expect(refused(['sse', '--pool', 'p'])).toBe('unknown transport "sse": use "stdio" or "http"');
  expect(refused(['stdio'])).toMatch(/^--pool: required/);
  expect(refused(['stdio', '--pool', 'Python_Pool'])).toMatch(/^--pool: "Python_Pool" is not a Kubernetes object name/);
  expect(refused(['stdio', '--pool', 'p', '--namespace', 'a.b'])).toMatch(/^--namespace: "a.b" is not a namespace name/);
  expect(refused(['stdio', '--pool', 'p', '--ttl', 'forever'])).toMatch(/^--ttl: must be a number of seconds or a string like/);
  expect(refused(['stdio', '--pool', 'p', '--ttl', '48h'])).toBe('--ttl: 48h is longer than --max-ttl (24h)');
  expect(refused(['stdio', '--pool', 'p', '--idle-timeout=-1'])).toMatch(/^--idle-timeout: must be a number of seconds/);
  expect(refused(['stdio', '--pool', 'p', '--max-concurrent-calls', '0'])).toBe('--max-concurrent-calls: must be a whole number from 1 to 64, got "0"');
  expect(refused(['stdio', '--pool', 'p', '--max-output-bytes', '1e6'])).toMatch(/^--max-output-bytes: must be a whole number/);
  expect(refused(['stdio', '--pool', 'p', '--grpc-port', '70000'])).toMatch(/^--grpc-port: must be a whole number from 1 to 65535/);
  expect(refused(['stdio', '--pool', 'p', '--router-url', 'ftp://x'])).toBe('--router-url: "ftp://x" must start with http:// or https://');
  expect(refused(['stdio', '--pool', 'p', '--router-token', '--token-file', '/t'])).toMatch(/^--router-token and --token-file: give one of them/);
  expect(refused(['stdio', '--pool', 'p', '--listen', '127.0.0.1:1'])).toBe('--listen: only for the http transport');
  expect(refused(['stdio', '--pool', 'p', '--frobnicate'])).toBe('Unknown option \'--frobnicate\'');
  expect(refused(['http', '--pool', 'p', '--listen', '8765'])).toMatch(/^--listen: "8765" is not HOST:PORT/);
  expect(refused(['http', '--pool', 'p', '--listen', 'example.com:80'])).toBe('--listen: "example.com" is not an IP address or localhost');
  expect(refused(['http', '--pool', 'p', '--allowed-origin', 'https://app.example.com/path'])).toMatch(/^--allowed-origin: "https:\/\/app.example.com\/path" is not an origin/);
});

test('HTTP listens on loopback unless --allow-remote, which needs --auth-token-file', () => {
  expect(refused(['http', '--pool', 'p', '--listen', '0.0.0.0:8765'])).toMatch(/^--listen: 0\.0\.0\.0 is not a loopback address; .*Pass --allow-remote/);
  expect(refused(['http', '--pool', 'p', '--listen', '10.0.0.5:8765', '--allow-remote'])).toBe('--allow-remote: needs --auth-token-file (the server has no other authentication)');
  expect(parseFlags(['http', '--pool', 'p', '--listen', '0.0.0.0:8765', '--allow-remote', '--auth-token-file', '/t'])).toMatchObject({ http: { host: '0.0.0.0', allowRemote: true, authTokenFile: '/t' } });
  expect(['127.0.0.1', '127.9.9.9', '::1', 'localhost'].map(isLoopback)).toEqual([true, true, true, true]);
  expect(['0.0.0.0', '::', '10.0.0.1', '128.0.0.1'].map(isLoopback)).toEqual([false, false, false, false]);
});

const suspendAfter = (argv: string[]): number | undefined => (parseFlags(['stdio', '--pool', 'p', ...argv]) as { common: { suspendAfterSeconds?: number } }).common.suspendAfterSeconds;

test('--suspend-after: a duration in whole seconds; unset, none', () => {
  expect(suspendAfter(['--suspend-after', '2m'])).toBe(120);
  expect(suspendAfter(['--suspend-after', '90'])).toBe(90);
  expect(suspendAfter(['--suspend-after', '2h', '--idle-timeout', '0'])).toBe(7200);
  expect(parseFlags(['stdio', '--pool', 'p'])).not.toHaveProperty('common.suspendAfterSeconds');
});

test('--suspend-after negative controls: not whole seconds, not a duration, or not shorter than --idle-timeout', () => {
  expect(refused(['stdio', '--pool', 'p', '--suspend-after', '1500ms'])).toBe('--suspend-after: must be whole seconds, e.g. 90s or 2m, got "1500ms"');
  expect(refused(['stdio', '--pool', 'p', '--suspend-after', 'soon'])).toMatch(/^--suspend-after: must be a number of seconds or a string like/);
  expect(refused(['stdio', '--pool', 'p', '--suspend-after', '0'])).toMatch(/^--suspend-after: must be a positive number of seconds/);
  expect(refused(['stdio', '--pool', 'p', '--suspend-after', '10m'])).toBe('--suspend-after: 10m is not shorter than --idle-timeout (10m): the sandbox would be released before it ever sleeps; '
    + 'raise --idle-timeout (0: never) to keep a sleeping sandbox longer');
});

