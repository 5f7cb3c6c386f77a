/**
 * Small combinators for props fuzzing: every generated value carries the names of the fields that
 * were given an invalid value (`bad`), so a property can demand that an error names one of them.
 */
import * as fc from 'fast-check';

export interface Tagged<T = unknown> {
  readonly v: T;
  /** Names (prop names and their manifest aliases) of which at least one must appear in the error. */
  readonly bad: readonly string[][];
}
export type Gen<T = unknown> = fc.Arbitrary<Tagged<T>>;

export const ok = <T>(arb: fc.Arbitrary<T>): Gen<T> => arb.map((v) => ({ v, bad: [] }));

/**
 * How often a field gets a bad value: `goodWeight` to 1, or never when 0. Generators are built once
 * per mode (see `modes`), so one run mixes all-valid props, props with about one bad field, and
 * props with several.
 */
let goodWeight = 0;

/** Build the generators of `make` in each mode and pick among them: valid, sparse faults, dense faults. */
export function modes<T>(make: () => Gen<T>): Gen<T> {
  const built = [0, 40, 6].map((w) => {
    goodWeight = w;
    return make();
  });
  goodWeight = 0;
  return fc.oneof(...built);
}

/** Mostly `good`; sometimes (per the mode) a value from `bad`, tagged with `names`. */
export function field<T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown>, names: string[]): Gen<T> {
  if (goodWeight === 0) return ok(good);
  return fc.oneof(
    { weight: goodWeight, arbitrary: ok(good) },
    { weight: 1, arbitrary: bad.map((v) => ({ v: v as T, bad: [names] })) },
  );
}

/** An object of which each key is present or not. */
export function rec(required: Record<string, Gen>, optional: Record<string, Gen> = {}): Gen<Record<string, unknown>> {
  const opt = Object.fromEntries(Object.entries(optional).map(([k, g]) => [k, fc.option(g, { nil: undefined, freq: 2 })]));
  return fc.record({ ...required, ...opt }).map((r) => {
    const v: Record<string, unknown> = {};
    const bad: string[][] = [];
    for (const [k, t] of Object.entries(r)) {
      if (t === undefined) continue;
      v[k] = (t as Tagged).v;
      bad.push(...(t as Tagged).bad);
    }
    return { v, bad };
  });
}

export function list<T>(g: Gen<T>, minLength = 0, maxLength = 3): Gen<T[]> {
  return fc.array(g, { minLength, maxLength }).map((items) => ({ v: items.map((i) => i.v), bad: items.flatMap((i) => i.bad) }));
}

export function map<A, B>(g: Gen<A>, f: (a: A) => B): Gen<B> {
  return g.map((t) => ({ v: f(t.v), bad: t.bad }));
}

// No null: the jsii kernel hands a Python None or Java null to JavaScript as undefined (unset).
export const NOT_STRING = fc.constantFrom<unknown>(42, true, {}, [], Number.NaN);
export const NOT_NUMBER = fc.constantFrom<unknown>('80', true, {}, [], Number.NaN, Number.POSITIVE_INFINITY);
export const NOT_BOOLEAN = fc.constantFrom<unknown>('yes', 1, 0, {}, []);
export const NOT_LIST = fc.constantFrom<unknown>('a', 7, {}, true);
export const NOT_MAP = fc.constantFrom<unknown>('a=b', 7, ['a'], true);

export const DNS_LABEL = fc.stringMatching(/^[a-z]([-a-z0-9]{0,14}[a-z0-9])?$/);
export const BAD_DNS_LABEL = fc.oneof(
  fc.constantFrom('', 'Foo', 'a_b', '-a', 'a-', 'a b', 'ä', 'a.b', 'x'.repeat(64)),
  NOT_STRING,
);
export const BAD_SUBDOMAIN = fc.oneof(fc.constantFrom('', 'Foo', 'a_b', '-a', 'a..b', 'ä', 'a/b', 'x'.repeat(254)), NOT_STRING);
export const QUANTITY = fc.constantFrom('1', '500m', '1Gi', '2.5', '10Mi', '1e3', '0');
export const BAD_QUANTITY = fc.oneof(fc.constantFrom('', '1 Gi', 'ten', '1GB', '--1', 'Gi', '1.2.3'), fc.constantFrom<unknown>(5, true, {}));
export const TIME = fc.constantFrom('2026-12-01T18:00:00Z', '2030-01-02T03:04:05.123+02:00', '2026-12-01t18:00:00z');
export const BAD_TIME = fc.oneof(
  fc.constantFrom('tomorrow', '2026-13-01T00:00:00Z', '2026-12-01 18:00', '2026-12-01T18:00:00', '', '1700000000', '2026-12-01T25:00:00Z'),
  fc.constantFrom<unknown>(1700000000, {}),
);
export const LABEL_KEY = fc.stringMatching(/^([a-z]{1,6}\.example\.com\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?$/);
export const BAD_LABEL_KEY = fc.constantFrom('', '/a', 'a/', 'Foo_/x', '-a', 'a b', 'x'.repeat(64), 'a/b/c', 'EXAMPLE.com/x');
export const LABEL_VALUE = fc.stringMatching(/^(([A-Za-z0-9][-A-Za-z0-9_.]{0,10})?[A-Za-z0-9])?$/);
export const BAD_LABEL_VALUE = fc.oneof(fc.constantFrom('-a', 'a b', 'x'.repeat(64), 'a/b', 'é'), NOT_STRING);
export const IMAGE = fc.constantFrom('python:3.12-slim', 'busybox', 'ghcr.io/acme/agent@sha256:' + 'a'.repeat(64), 'registry.local:5000/x/y:1');
export const BAD_IMAGE = fc.oneof(fc.constantFrom('', ' busybox', 'busybox ', 'a b'), NOT_STRING);

/** A map of which some keys or values are bad; `field` names it in errors. */
export function labels(fieldName: string, value = LABEL_VALUE, badValue: fc.Arbitrary<unknown> = BAD_LABEL_VALUE): Gen<Record<string, string>> {
  const good = fc.tuple(LABEL_KEY, value).map(([k, v]) => ({ v: [k, v] as [string, unknown], bad: [] as string[][] }));
  const entry = goodWeight === 0 ? good : fc.oneof(
    { weight: goodWeight, arbitrary: good },
    { weight: 1, arbitrary: fc.tuple(BAD_LABEL_KEY, value).map(([k, v]) => ({ v: [k, v] as [string, unknown], bad: [[fieldName]] })) },
    { weight: 1, arbitrary: fc.tuple(LABEL_KEY, badValue).map(([k, v]) => ({ v: [k, v] as [string, unknown], bad: [[fieldName]] })) },
  );
  const maps = fc.uniqueArray(entry, { maxLength: 3, selector: (e) => e.v[0] })
    .map((entries) => ({ v: Object.fromEntries(entries.map((e) => e.v)) as Record<string, string>, bad: entries.flatMap((e) => e.bad) }));
  if (goodWeight === 0) return maps;
  const notMap = NOT_MAP.map((v) => ({ v: v as Record<string, string>, bad: [[fieldName]] }));
  return fc.oneof({ weight: goodWeight, arbitrary: maps }, { weight: 1, arbitrary: notMap });
}
