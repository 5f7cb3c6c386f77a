/**
 * Pod addresses for the local cluster: the pod CIDR is cut in two, kwok allocates from the lower
 * half and the pod runner from the upper half, so an address the runner binds can never also be
 * given by kwok to another pod. Both halves stay inside 127.0.0.0/8: every pod address is local.
 * Several clusters may run on one machine: a runner starts at a random place in its half and
 * leases each address machine-wide before it uses it.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export interface Ipv4Cidr {
  readonly base: number;
  readonly bits: number;
}

export function parseIpv4(ip: string): number {
  const parts = ip.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) throw new Error(`"${ip}" is not an IPv4 address`);
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

export function formatIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

export function parseCidr(cidr: string): Ipv4Cidr {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(cidr);
  if (!m || Number(m[2]) > 32) throw new Error(`"${cidr}" is not an IPv4 CIDR such as 127.64.0.0/12`);
  const bits = Number(m[2]);
  const size = 2 ** (32 - bits);
  return { base: Math.floor(parseIpv4(m[1]) / size) * size, bits };
}

export function formatCidr(c: Ipv4Cidr): string {
  return `${formatIpv4(c.base)}/${c.bits}`;
}

export function cidrContains(c: Ipv4Cidr, ip: string): boolean {
  const n = parseIpv4(ip);
  return n >= c.base && n < c.base + 2 ** (32 - c.bits);
}

/** An IPv4 CIDR inside 127.0.0.0/8 (a /8 to /30): addresses nothing but this machine answers. */
export function isLoopbackCidr(cidr: string): boolean {
  const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  return !!m && m.slice(1, 4).every((o) => Number(o) <= 255) && Number(m[4]) >= 8 && Number(m[4]) <= 30;
}

/** [kwok's half, the pod runner's half] of the pod CIDR. */
export function splitPodCidr(cidr: string): [string, string] {
  const c = parseCidr(cidr);
  if (c.bits > 24) throw new Error(`pod CIDR ${cidr} is too small to share between kwok and the pod runner; use a /24 or larger`);
  const half = 2 ** (32 - c.bits - 1);
  return [formatCidr({ base: c.base, bits: c.bits + 1 }), formatCidr({ base: c.base + half, bits: c.bits + 1 })];
}

export interface IpAllocatorOptions {
  /** Where in the CIDR to start handing out addresses (taken modulo its size). @default 1 */
  readonly offset?: number;
  /** Takes an address for this process; false when another process holds it (AddressLeases.claim). */
  readonly claim?: (ip: string) => boolean;
}

/**
 * Hands out addresses of a CIDR in order from `offset`, never one that is in use (given back by
 * `reserve` for pods that already have one, or refused by `claim`) and never a .0 or .255 (valid
 * on loopback, but confusing to read).
 */
export class IpAllocator {
  private readonly cidr: Ipv4Cidr;
  private readonly size: number;
  private readonly used = new Set<number>();
  private readonly claim: (ip: string) => boolean;
  private next: number;

  public constructor(cidr: string, options: IpAllocatorOptions = {}) {
    this.cidr = parseCidr(cidr);
    this.size = 2 ** (32 - this.cidr.bits);
    this.next = this.cidr.base + ((options.offset ?? 1) % this.size);
    this.claim = options.claim ?? (() => true);
  }

  public reserve(ip: string): boolean {
    if (!cidrContains(this.cidr, ip)) return false;
    this.used.add(parseIpv4(ip));
    return true;
  }

  public release(ip: string): void {
    this.used.delete(parseIpv4(ip));
  }

  public allocate(): string {
    for (let tries = 0; tries < this.size; tries++) {
      const n = this.next;
      this.next = this.cidr.base + ((n - this.cidr.base + 1) % this.size);
      if (n % 256 === 0 || n % 256 === 255 || this.used.has(n) || !this.claim(formatIpv4(n))) continue;
      this.used.add(n);
      return formatIpv4(n);
    }
    throw new Error(`no free pod address left in ${formatCidr(this.cidr)}`);
  }
}

/**
 * Machine-wide leases on pod addresses, so runners of parallel clusters on one host never bind
 * the same address: one file per address, created exclusively and holding the runner's pid; a
 * lease whose pid is gone is taken over.
 */
export class AddressLeases {
  private readonly held = new Set<string>();

  public constructor(private readonly dir = path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'cdk8s-agent-sandbox-pod-ips')) {
    fs.mkdirSync(dir, { recursive: true });
    // Leases of runners that were SIGKILLed.
    for (const ip of fs.readdirSync(dir)) {
      const owner = Number(fs.readFileSync(path.join(dir, ip), 'utf8').trim());
      if (!fs.existsSync(`/proc/${owner}`)) fs.rmSync(path.join(dir, ip), { force: true });
    }
  }

  /** True when this process now holds `ip`; false when a live process does. */
  public claim(ip: string): boolean {
    const file = path.join(this.dir, ip);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
        this.held.add(ip);
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const owner = Number(fs.readFileSync(file, 'utf8').trim());
      if (owner === process.pid || fs.existsSync(`/proc/${owner}`)) return owner === process.pid;
      fs.rmSync(file, { force: true });
    }
    return false;
  }

  public release(ip: string): void {
    if (this.held.delete(ip)) fs.rmSync(path.join(this.dir, ip), { force: true });
  }

  public releaseAll(): void {
    for (const ip of [...this.held]) this.release(ip);
  }
}
