import { cpuQuota, workerCount } from '../../src/router/workers';

const files = (map: Record<string, string>) => (file: string) => map[file];

describe('--workers', () => {
  test('a number is taken as given', () => {
    expect(workerCount(3, files({ '/sys/fs/cgroup/cpu.max': '100000 100000' }), 8)).toBe(3);
  });

  test('0: one per core, capped by the cgroup v2 CPU limit (rounded up)', () => {
    expect(workerCount(0, files({}), 8)).toBe(8);
    expect(workerCount(0, files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 8)).toBe(8);
    expect(workerCount(0, files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }), 8)).toBe(2);
    expect(workerCount(0, files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }), 8)).toBe(1);
    expect(workerCount(0, files({ '/sys/fs/cgroup/cpu.max': '1600000 100000\n' }), 4)).toBe(4);
  });

  test('0 on cgroup v1: cfs quota over period; -1 is no limit', () => {
    expect(cpuQuota(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '200000', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }))).toBe(2);
    expect(cpuQuota(files({ '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '-1', '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000' }))).toBeUndefined();
    expect(workerCount(0, files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '250000', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }), 8)).toBe(3);
  });
});
