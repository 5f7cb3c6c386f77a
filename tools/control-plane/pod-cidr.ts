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

/** How old (by mtime) an empty or unreadable lease must be before it counts as abandoned. */
const UNREADABLE_LEASE_GRACE_MS = 30_000;
/** A runner's temporary files in the lease directory: `.<ip>.<pid>.<random>.tmp|stale`. */
const SCRATCH = /^\..*\.(\d+)\.[0-9a-f]+\.(tmp|stale)$/;

function alive(pid: number): boolean {
  return fs.existsSync(`/proc/${pid}`);
}

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** A lease file as read: gone, held by a live process, or left by a dead (or never finished) one. */
type LeaseState = { readonly kind: 'missing' } | { readonly kind: 'live'; readonly pid: number } | { readonly kind: 'stale'; readonly content: string };

function readLease(file: string): LeaseState {
  let content: string;
  let mtimeMs: number;
  try {
    content = fs.readFileSync(file, 'utf8');
    mtimeMs = fs.statSync(file).mtimeMs;
  } catch (e) {
    if (errno(e) === 'ENOENT') return { kind: 'missing' };
    throw e;
  }
  if (/^[1-9]\d*\n?$/.test(content)) {
    const pid = Number(content.trim());
    return alive(pid) ? { kind: 'live', pid } : { kind: 'stale', content };
  }
  // Empty or garbled: maybe being written by an older runner; abandoned only once it is old.
  return Date.now() - mtimeMs > UNREADABLE_LEASE_GRACE_MS ? { kind: 'stale', content } : { kind: 'live', pid: 0 };
}

function scratchName(dir: string, ip: string, kind: 'tmp' | 'stale'): string {
  return path.join(dir, `.${ip}.${process.pid}.${Math.floor(Math.random() * 2 ** 32).toString(16)}.${kind}`);
}

/**
 * Removes the stale lease `dir/ip` that was read as `content`, safely against other runners doing
 * the same: the file is renamed away (only one rename can win) and deleted only when the renamed
 * file still holds `content`; a lease someone made meanwhile is put back. True when it was removed.
 */
export function removeStaleLease(dir: string, ip: string, content: string): boolean {
  const file = path.join(dir, ip);
  const aside = scratchName(dir, ip, 'stale');
  try {
    fs.renameSync(file, aside);
  } catch (e) {
    if (errno(e) === 'ENOENT') return false;
    throw e;
  }
  try {
    if (fs.readFileSync(aside, 'utf8') === content) return true;
    // Not the lease we judged stale: another runner's fresh one. Give it back.
    try {
      fs.linkSync(aside, file);
    } catch (e) {
      if (errno(e) !== 'EEXIST') throw e;
    }
    return false;
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

/**
 * Machine-wide leases on pod addresses, so runners of parallel clusters on one host never bind
 * the same address: one file per address holding the runner's pid, created with its content in
 * one step (a temp file hard-linked to the lease name, which fails when it exists). A lease whose
 * pid is gone, or that stayed empty or garbled for 30 s, is taken over (see `removeStaleLease`).
 */
export class AddressLeases {
  private readonly held = new Set<string>();

  public constructor(private readonly dir = path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'cdk8s-agent-sandbox-pod-ips')) {
    fs.mkdirSync(dir, { recursive: true });
    // Leases and temp files of runners that were SIGKILLed.
    for (const name of fs.readdirSync(dir)) {
      const scratch = SCRATCH.exec(name);
      if (scratch) {
        if (!alive(Number(scratch[1]))) fs.rmSync(path.join(dir, name), { force: true });
        continue;
      }
      const state = readLease(path.join(dir, name));
      if (state.kind === 'stale') removeStaleLease(dir, name, state.content);
    }
  }

  /** True when this process now holds `ip`; false when a live process does (or it kept changing). */
  public claim(ip: string): boolean {
    const file = path.join(this.dir, ip);
    const tmp = scratchName(this.dir, ip, 'tmp');
    fs.writeFileSync(tmp, `${process.pid}\n`, { flag: 'wx' });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          fs.linkSync(tmp, file);
          this.held.add(ip);
          return true;
        } catch (e) {
          if (errno(e) !== 'EEXIST') throw e;
        }
        const state = readLease(file);
        if (state.kind === 'live') return state.pid === process.pid;
        // 'missing': released between our link and read; 'stale': removed (by us or another runner). Try again.
        if (state.kind === 'stale') removeStaleLease(this.dir, ip, state.content);
      }
      return false;
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }

  public release(ip: string): void {
    if (this.held.delete(ip)) fs.rmSync(path.join(this.dir, ip), { force: true });
  }

  public releaseAll(): void {
    for (const ip of [...this.held]) this.release(ip);
  }
}
