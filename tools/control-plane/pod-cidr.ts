/**
 * Pod addresses for the local cluster: the pod CIDR is cut in two, kwok allocates from the lower
 * half and the pod runner from the upper half, so an address the runner binds can never also be
 * given by kwok to another pod. Both halves stay inside 127.0.0.0/8: every pod address is local.
 */

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

/** [kwok's half, the pod runner's half] of the pod CIDR. */
export function splitPodCidr(cidr: string): [string, string] {
  const c = parseCidr(cidr);
  if (c.bits > 24) throw new Error(`pod CIDR ${cidr} is too small to share between kwok and the pod runner; use a /24 or larger`);
  const half = 2 ** (32 - c.bits - 1);
  return [formatCidr({ base: c.base, bits: c.bits + 1 }), formatCidr({ base: c.base + half, bits: c.bits + 1 })];
}

/**
 * Hands out addresses of a CIDR in order, never one that is in use (given back by `reserve` for
 * pods that already have one) and never a .0 or .255 (valid on loopback, but confusing to read).
 */
export class IpAllocator {
  private readonly cidr: Ipv4Cidr;
  private readonly used = new Set<number>();
  private next: number;

  public constructor(cidr: string) {
    this.cidr = parseCidr(cidr);
    this.next = this.cidr.base + 1;
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
    const end = this.cidr.base + 2 ** (32 - this.cidr.bits);
    for (let tries = 0; tries < end - this.cidr.base; tries++) {
      const n = this.next;
      this.next = n + 1 >= end ? this.cidr.base + 1 : n + 1;
      if (n % 256 === 0 || n % 256 === 255 || this.used.has(n)) continue;
      this.used.add(n);
      return formatIpv4(n);
    }
    throw new Error(`no free pod address left in ${formatCidr(this.cidr)}`);
  }
}
