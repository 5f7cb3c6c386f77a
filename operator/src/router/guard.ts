/**
 * Where the router may connect: only a pod address, never link-local (cloud metadata at
 * 169.254.169.254, fe80::/10), never the router's own listen addresses, and only inside
 * --allowed-pod-cidrs. This check runs on every dial, after the cache said the address belongs to
 * the requested Sandbox, so a stale or forged address still cannot reach anything else.
 */
import { BlockList, isIP } from 'node:net';

/** RFC 1918, CGNAT 100.64.0.0/10 (some CNIs' pod ranges) and IPv6 ULA. */
export const DEFAULT_ALLOWED_POD_CIDRS: readonly string[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'];

const NEVER: readonly string[] = ['169.254.0.0/16', 'fe80::/10', '0.0.0.0/32', '::/128'];

/** Most answers the guard keeps (one per pod address it was asked about). */
const MAX_CACHED = 4096;

export interface Cidr {
  readonly network: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/** Parse `a.b.c.d/n` or `x::/n`; throws a sentence naming the mistake. */
export function parseCidr(text: string): Cidr {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  const version = match ? isIP(match[1]) : 0;
  const prefix = match ? Number(match[2]) : NaN;
  if (!match || version === 0 || prefix > (version === 4 ? 32 : 128)) {
    throw new Error(`"${text}" is not a CIDR such as 10.0.0.0/8 or fc00::/7`);
  }
  return { network: match[1], prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** `::ffff:10.1.2.3` → `10.1.2.3`, so a mapped address meets the IPv4 rules. */
export function unmapIPv4(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1] : ip;
}

export class AddressGuard {
  private readonly allowed = new BlockList();
  private readonly never = new BlockList();
  /** A BlockList, not a set of strings: one address has many spellings (`fd00::1`, `fd00:0::1`, `::ffff:a00:5`). */
  private readonly own = new BlockList();
  /**
   * Answers by address as given: a check runs twice per request (at admission and at dial) and
   * BlockList.check parses the address into a new SocketAddress each time. Pod addresses are few; the
   * map is emptied when it reaches MAX_CACHED or the router learns another of its own addresses.
   */
  private readonly answers = new Map<string, string | undefined>();

  public constructor(allowedCidrs: readonly string[], ownAddresses: readonly string[] = []) {
    for (const c of allowedCidrs.map(parseCidr)) this.allowed.addSubnet(c.network, c.prefix, c.family);
    for (const c of NEVER.map(parseCidr)) this.never.addSubnet(c.network, c.prefix, c.family);
    for (const a of ownAddresses) this.addOwnAddress(a);
  }

  /** An address the router listens on (added once the server is bound). */
  public addOwnAddress(ip: string): void {
    this.answers.clear();
    const plain = unmapIPv4(ip);
    const version = isIP(plain);
    if (version !== 0) this.own.addAddress(plain, version === 4 ? 'ipv4' : 'ipv6');
  }

  /** undefined when the router may connect to `ip`; otherwise why not. */
  public check(address: string): string | undefined {
    if (this.answers.has(address)) return this.answers.get(address);
    const answer = this.decide(address);
    if (this.answers.size >= MAX_CACHED) this.answers.clear();
    this.answers.set(address, answer);
    return answer;
  }

  private decide(address: string): string | undefined {
    const ip = unmapIPv4(address);
    const version = isIP(ip);
    if (version === 0) return `"${address}" is not an IP address`;
    const family = version === 4 ? 'ipv4' : 'ipv6';
    if (this.never.check(ip, family)) return `${ip} is link-local or unspecified`;
    if (this.own.check(ip, family)) return `${ip} is one of the router's own addresses`;
    if (!this.allowed.check(ip, family)) return `${ip} is outside --allowed-pod-cidrs`;
    return undefined;
  }
}
