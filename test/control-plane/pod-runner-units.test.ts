/**
 * The pure parts of the pod runner (tools/control-plane): which containers run the operator's
 * runtime and with which flags, how the pod CIDR is shared with kwok, and how addresses are handed
 * out and leased. The runner itself is tested on the real control plane (test/integration).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { AddressLeases, IpAllocator, isLoopbackCidr, removeStaleLease, splitPodCidr } from '../../tools/control-plane/pod-cidr';
import { launchFor, LaunchError, PodContext, runtimeArgs } from '../../tools/control-plane/pod-command';
import { PodRunner } from '../../tools/control-plane/pod-runner';

const POD: PodContext = { namespace: 'ns', name: 'p', ip: '127.72.0.9', workspace: '/ws/p', bundle: '/repo/operator/dist/agent-sandbox-operator.mjs', allowRoot: false };

describe('runtimeArgs', () => {
  test.each([
    ['the binary name', { command: ['agent-sandbox-operator', 'runtime', '--port=1'] }],
    ['a path to the binary', { command: ['/usr/local/bin/agent-sandbox-operator'], args: ['runtime', '--port=1'] }],
    ['node and the bundle', { command: ['node', 'operator/dist/agent-sandbox-operator.mjs', 'runtime', '--port=1'] }],
    ['the injected form', { command: ['/opt/agent-sandbox/bin/node', '/opt/agent-sandbox/bin/agent-sandbox-operator.mjs', 'runtime'], args: ['--port=1'] }],
    ['the operator image\'s entrypoint', { image: 'ghcr.io/x/agent-sandbox-operator:v1', args: ['runtime', '--port=1'] }],
  ])('recognises %s', (_, c) => {
    expect(runtimeArgs({ name: 'c', ...c })).toEqual(['--port=1']);
  });

  test.each([
    ['another command of the operator', { command: ['agent-sandbox-operator', 'router'] }],
    ['a program that only mentions it', { command: ['sh', '-c', 'agent-sandbox-operator runtime'] }],
    ['an empty command in another image', { image: 'python:3.12', args: ['runtime'] }],
  ])('leaves %s alone', (_, c) => {
    expect(runtimeArgs({ name: 'c', ...c })).toBeUndefined();
  });
});

describe('launchFor', () => {
  test('a runtime gets the bundle, its own flags, the Pod\'s address and workspace (whatever it asked for)', () => {
    const launch = launchFor({ name: 'rt', command: ['agent-sandbox-operator', 'runtime', '--listen-address', '0.0.0.0', '--workspace=/app', '--port=9999'] }, 0,
      { ...POD, allowRoot: true });
    expect(launch).toMatchObject({ kind: 'runtime', bin: process.execPath, readiness: { kind: 'http', port: 9999, path: '/healthz' } });
    expect(launch.args).toEqual([POD.bundle, 'runtime', '--port=9999', '--listen-address=127.72.0.9', '--workspace=/ws/p', '--allow-root']);
  });

  test('another container runs its command with the Pod\'s env; `node` is this Node.js', () => {
    const launch = launchFor({
      name: 'app',
      command: ['node', '/srv/app.js'],
      env: [{ name: 'A', value: '1' }, { name: 'ME', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
      ports: [{ containerPort: 80 }],
    }, 1, POD);
    expect(launch).toMatchObject({ kind: 'command', bin: process.execPath, args: ['/srv/app.js'], readiness: { kind: 'tcp', ports: [80] } });
    expect(launch.env).toMatchObject({ A: '1', ME: '127.72.0.9', POD_IP: '127.72.0.9', POD_NAME: 'p', POD_NAMESPACE: 'ns' });
  });

  test('$(NAME) in command and args is the env value, as the kubelet expands it; $$ is $; an unknown name stays', () => {
    const launch = launchFor({
      name: 'router',
      command: ['node', '/srv/router.js'],
      args: ['--bind-address=$(POD_IP):8080', '--tag=$(TAG)', '--literal=$$(POD_IP)', '--unknown=$(NOPE)'],
      env: [{ name: 'TAG', value: 'v1' }],
    }, 0, POD);
    expect(launch.args).toEqual(['/srv/router.js', '--bind-address=127.72.0.9:8080', '--tag=v1', '--literal=$(POD_IP)', '--unknown=$(NOPE)']);
    const runtime = launchFor({ name: 'rt', command: ['agent-sandbox-operator', 'runtime', '--port=$(PORT)'], env: [{ name: 'PORT', value: '9000' }] }, 0, POD);
    expect(runtime.readiness).toEqual({ kind: 'http', port: 9000, path: '/healthz' });
  });

  test('a container without a command is refused with the field to fix', () => {
    expect(() => launchFor({ name: 'x', image: 'busybox' }, 2, POD)).toThrow(LaunchError);
    expect(() => launchFor({ name: 'x', image: 'busybox' }, 2, POD)).toThrow(/spec\.containers\[2\]\.command is empty.*explicit command/);
  });
});

describe('pod addresses', () => {
  test('kwok gets the lower half of the pod CIDR, the runner the upper', () => {
    expect(splitPodCidr('127.64.0.0/12')).toEqual(['127.64.0.0/13', '127.72.0.0/13']);
    expect(() => splitPodCidr('127.0.0.0/25')).toThrow(/too small/);
  });

  test('the runner refuses a pod CIDR outside loopback before it touches anything', () => {
    expect(isLoopbackCidr('127.72.0.0/13')).toBe(true);
    expect(isLoopbackCidr('10.0.0.0/8')).toBe(false);
    expect(() => new PodRunner({ kubeconfig: '/nonexistent', workDir: '/nonexistent', cidr: '10.72.0.0/13', bundle: '', log: () => undefined }))
      .toThrow('--cidr must be an IPv4 CIDR inside 127.0.0.0/8, such as 127.72.0.0/13; got "10.72.0.0/13"');
  });

  test('addresses come in order from the offset, wrap, and skip .0, .255, reserved and refused ones', () => {
    const a = new IpAllocator('127.72.0.0/22', { offset: 1021, claim: (ip) => ip !== '127.72.0.2' });
    a.reserve('127.72.0.3');
    expect([a.allocate(), a.allocate(), a.allocate()]).toEqual(['127.72.3.253', '127.72.3.254', '127.72.0.1']);
    expect(a.allocate()).toBe('127.72.0.4');
  });

  test('a lease is exclusive while its holder lives and taken over when it is gone', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leases-'));
    try {
      fs.writeFileSync(path.join(dir, '127.72.0.5'), `${process.ppid}\n`); // alive: our parent
      fs.writeFileSync(path.join(dir, '127.72.0.6'), '999999999\n'); // no such process
      const leases = new AddressLeases(dir);
      expect(fs.existsSync(path.join(dir, '127.72.0.6'))).toBe(false);
      expect(leases.claim('127.72.0.5')).toBe(false);
      expect(leases.claim('127.72.0.6')).toBe(true);
      expect(leases.claim('127.72.0.6')).toBe(true);
      leases.releaseAll();
      expect(fs.readdirSync(dir)).toEqual(['127.72.0.5']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('lease races', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leases-'));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    test('a claimed lease holds the pid from the start, and no temp file is left', () => {
      const leases = new AddressLeases(dir);
      expect(leases.claim('127.72.0.7')).toBe(true);
      expect(fs.readdirSync(dir)).toEqual(['127.72.0.7']);
      expect(fs.readFileSync(path.join(dir, '127.72.0.7'), 'utf8')).toBe(`${process.pid}\n`);
    });

    test('an empty lease (another runner mid-write) is live: kept and refused; abandoned only once it is old', () => {
      const empty = path.join(dir, '127.72.0.8');
      fs.writeFileSync(empty, '');
      const leases = new AddressLeases(dir);
      expect(fs.existsSync(empty)).toBe(true);
      expect(leases.claim('127.72.0.8')).toBe(false);
      expect(fs.readFileSync(empty, 'utf8')).toBe('');
      const old = new Date(Date.now() - 60_000);
      fs.utimesSync(empty, old, old);
      expect(leases.claim('127.72.0.8')).toBe(true);
      expect(fs.readFileSync(empty, 'utf8')).toBe(`${process.pid}\n`);
    });

    test('a lease that vanishes between the refused create and the read is not a crash', () => {
      // A dangling symlink: creating the lease fails with EEXIST, reading it with ENOENT, every time.
      fs.symlinkSync(path.join(dir, 'gone'), path.join(dir, '127.72.0.9'));
      expect(new AddressLeases(dir).claim('127.72.0.9')).toBe(false);
    });

    test('a stale lease replaced by a fresh one before the takeover is put back, not deleted', () => {
      const file = path.join(dir, '127.72.0.10');
      fs.writeFileSync(file, '999999999\n');
      expect(removeStaleLease(dir, '127.72.0.10', '999999999\n')).toBe(true);
      expect(fs.existsSync(file)).toBe(false);
      // Read as stale by one runner, then taken over by another before the first acts on it.
      fs.writeFileSync(file, `${process.ppid}\n`);
      expect(removeStaleLease(dir, '127.72.0.10', '999999999\n')).toBe(false);
      expect(fs.readFileSync(file, 'utf8')).toBe(`${process.ppid}\n`);
      expect(fs.readdirSync(dir)).toEqual(['127.72.0.10']);
      expect(new AddressLeases(dir).claim('127.72.0.10')).toBe(false);
    });

    test('temp files of dead runners are cleared at start; a live runner\'s are kept', () => {
      fs.writeFileSync(path.join(dir, '.127.72.0.11.999999999.abc.tmp'), '999999999\n');
      // Aside, the stale lease it is about to delete (holding the dead pid).
      fs.writeFileSync(path.join(dir, `.127.72.0.12.${process.ppid}.abc.stale`), '999999999\n');
      new AddressLeases(dir);
      expect(fs.readdirSync(dir)).toEqual([`.127.72.0.12.${process.ppid}.abc.stale`]);
    });
  });
});
