import { RuntimeUsageError, parseRuntimeArgs } from '../../src/commands/runtime';

test('defaults: upstream port 8888 on every address, no FilesystemService, root refused', () => {
  const flags = parseRuntimeArgs([]);
  expect(flags).toMatchObject({ port: 8888, listenAddress: '0.0.0.0', allowRoot: false, maxOutputBytes: 4 * 1024 * 1024, help: false });
  expect(flags.filesPort).toBeUndefined();
  expect(flags.grpcPort).toBeUndefined();
  expect(flags.streamChunkSize).toBe(4096);
  expect(flags.maxConcurrentCommands).toBe(16);
  expect(flags.maxBackgroundProcesses).toBe(16);
  expect(flags.commandCgroups).toBe(true);
  expect(flags.tokenFile).toBeUndefined();
});

test('flags as "--name value" and "--name=value"', () => {
  expect(parseRuntimeArgs([
    '--port', '9000', '--listen-address=127.0.0.1', '--workspace', '/w', '--token-file=/t', '--allow-root',
    '--exec-timeout', '2.5', '--max-output-bytes=100', '--grace-period', '3', '--files-port', '8080',
    '--grpc-port=9090', '--stream-chunk-size', '1024', '--max-concurrent-commands', '3',
    '--command-cgroups=off', '--max-background-processes', '5',
  ])).toEqual({
    port: 9000,
    listenAddress: '127.0.0.1',
    workspace: '/w',
    tokenFile: '/t',
    allowRoot: true,
    execTimeoutSeconds: 2.5,
    maxOutputBytes: 100,
    maxConcurrentCommands: 3,
    maxBackgroundProcesses: 5,
    commandCgroups: false,
    gracePeriodSeconds: 3,
    filesPort: 8080,
    grpcPort: 9090,
    streamChunkSize: 1024,
    help: false,
  });
  expect(parseRuntimeArgs(['--files-port=off']).filesPort).toBeUndefined();
  expect(parseRuntimeArgs(['--grpc-port=0']).grpcPort).toBeUndefined();
  expect(parseRuntimeArgs(['-h']).help).toBe(true);
});

test.each([
  [['--port', '70000']],
  [['--port', '']],
  [['--exec-timeout', '0']],
  [['--grpc-port', 'x']],
  [['--stream-chunk-size', '0']],
  [['--max-concurrent-commands', '0']],
  [['--max-concurrent-commands', '2.5']],
  [['--max-background-processes', '0']],
  [['--command-cgroups', 'on']],
  [['--nope', 'x']],
  [['--workspace']],
  [['positional']],
])('%j is a usage error', (args) => {
  expect(() => parseRuntimeArgs(args)).toThrow(RuntimeUsageError);
});
