/**
 * Property tests of the router's address guard against an independent model: every address is a
 * 128-bit number (IPv4 as its IPv4-mapped IPv6 form `::ffff:a.b.c.d`, which is what the kernel
 * dials), a CIDR is a prefix of it, and one address has many spellings that must all get the same
 * verdict.
 */
import fc from 'fast-check';
import { AddressGuard } from '../../src/router/guard';

const MAPPED = 0xffffn * 2n ** 32n;
const ALL_BITS = 2n ** 128n - 1n;

/** The 128-bit model of an address or CIDR. */
interface Net { readonly value: bigint; readonly prefix: number }

const v4Text = (n: bigint) => [24n, 16n, 8n, 0n].map((shift) => String((n / 2n ** shift) % 256n)).join('.');
const groups = (n: bigint) => Array.from({ length: 8 }, (_, i) => (n / 2n ** BigInt(112 - 16 * i)) % 65536n);
const v6Text = (n: bigint) => groups(n).map((g) => g.toString(16)).join(':');

function contains(net: Net, address: bigint): boolean {
  const size = 2n ** BigInt(128 - net.prefix);
  return address / size === net.value / size;
}

/** Link-local and unspecified, in both families: what the guard never allows. */
const NEVER: readonly Net[] = [
  { value: MAPPED + 0xa9fen * 65536n, prefix: 112 }, // 169.254.0.0/16
  { value: MAPPED, prefix: 128 }, // 0.0.0.0
  { value: 0xfe80n * 2n ** 112n, prefix: 10 },
  { value: 0n, prefix: 128 }, // ::
];

/** Spellings of one address: IPv4 ones dotted and mapped (dotted and hex, short and long); IPv6 ones short, padded, upper case. */
function spellings(address: bigint): string[] {
  const hex = v6Text(address);
  const padded = groups(address).map((g) => g.toString(16).padStart(4, '0')).join(':');
  const out = [hex, padded, hex.toUpperCase()];
  if (address / 2n ** 32n === 0xffffn) {
    const v4 = v4Text(address % 2n ** 32n);
    out.push(v4, `::ffff:${v4}`, `::FFFF:${v4}`, `0:0:0:0:0:ffff:${v4}`, `::ffff:${hex.split(':').slice(6).join(':')}`);
  }
  return out;
}

const ipv4 = fc.bigInt({ min: 0n, max: 0xffffffffn }).map((n) => MAPPED + n);
const ipv6 = fc.bigInt({ min: 0n, max: ALL_BITS });
const address = fc.oneof(ipv4, ipv6, fc.constantFrom(...NEVER.map((n) => n.value)));

/** A CIDR with its text: IPv4 prefixes count from 96 in the model. */
const cidr = fc.oneof(
  fc.tuple(ipv4, fc.integer({ min: 0, max: 32 })).map(([value, p]) => ({
    net: { value, prefix: 96 + p }, text: `${v4Text(value % 2n ** 32n)}/${p}`,
  })),
  fc.tuple(ipv6, fc.integer({ min: 0, max: 128 })).map(([value, prefix]) => ({ net: { value, prefix }, text: `${v6Text(value)}/${prefix}` })),
);

/** An address, often inside one of `nets`: random host bits under a chosen prefix. */
function near(nets: readonly Net[]): fc.Arbitrary<bigint> {
  if (nets.length === 0) return address;
  return fc.oneof(address, fc.tuple(fc.constantFrom(...nets), ipv6).map(([net, host]) => {
    const size = 2n ** BigInt(128 - net.prefix);
    return (net.value / size) * size + host % size;
  }));
}

test('allowed exactly when inside an allowed CIDR and neither link-local, unspecified nor own', () => {
  const scenario = fc.tuple(fc.array(cidr, { maxLength: 4 }), fc.array(address, { maxLength: 2 })).chain(([cidrs, own]) =>
    fc.tuple(fc.constant(cidrs), fc.constant(own), near([...cidrs.map((c) => c.net), ...own.map((value) => ({ value, prefix: 128 }))])));
  fc.assert(fc.property(scenario, ([cidrs, own, target]) => {
    const guard = new AddressGuard(cidrs.map((c) => c.text), own.map(v6Text));
    const expected = cidrs.some((c) => contains(c.net, target))
      && !NEVER.some((n) => contains(n, target))
      && !own.includes(target);
    for (const spelling of spellings(target)) {
      expect({ spelling, allowed: guard.check(spelling) === undefined }).toEqual({ spelling, allowed: expected });
    }
  }));
});

test('an own address is refused under every spelling, whichever spelling registered it', () => {
  fc.assert(fc.property(ipv4, fc.nat(), fc.nat(), (own, registered, asked) => {
    const names = spellings(own);
    const guard = new AddressGuard(['0.0.0.0/0', '::/0'], [names[registered % names.length]]);
    const verdict = guard.check(names[asked % names.length]);
    expect(verdict).toMatch(NEVER.some((n) => contains(n, own)) ? /link-local or unspecified/ : /own addresses/);
  }));
});

test('regression: an IPv6 own address spelled differently, or an IPv4 one in mapped hex form, was let through', () => {
  const guard = new AddressGuard(['10.0.0.0/8', 'fc00::/7'], ['fd00::1', '10.0.0.5']);
  expect(guard.check('fd00:0:0:0:0:0:0:1')).toMatch(/own addresses/);
  expect(guard.check('::ffff:a00:5')).toMatch(/own addresses/);
});

test('text that is not an address is refused, never thrown on', () => {
  const guard = new AddressGuard(['0.0.0.0/0', '::/0']);
  fc.assert(fc.property(fc.string({ maxLength: 45 }), (text) => {
    const verdict = guard.check(text);
    if (!/^[0-9a-fA-F:.]+$/.test(text)) expect(verdict).toBe(`"${text}" is not an IP address`);
  }));
});

test('answers are remembered per address, and forgotten when the router learns another of its own addresses', () => {
  const guard = new AddressGuard(['10.0.0.0/8']);
  expect(guard.check('10.0.0.5')).toBeUndefined();
  expect(guard.check('10.0.0.5')).toBeUndefined(); // the remembered answer
  guard.addOwnAddress('10.0.0.5');
  expect(guard.check('10.0.0.5')).toMatch(/own addresses/);
  expect(guard.check('::ffff:10.0.0.5')).toMatch(/own addresses/);
});

test('a guard asked the same addresses again answers as a fresh guard does (remembering changes nothing)', () => {
  const cidrs = ['10.0.0.0/8', 'fc00::/7'];
  const remembering = new AddressGuard(cidrs, ['10.1.2.3']);
  const candidate = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('10.1.2.3', '169.254.169.254', 'fd00::1', 'not-an-ip'));
  fc.assert(fc.property(fc.array(candidate, { maxLength: 20 }), (addresses) => {
    for (const a of [...addresses, ...addresses]) expect([a, remembering.check(a)]).toEqual([a, new AddressGuard(cidrs, ['10.1.2.3']).check(a)]);
  }));
});
