import * as fc from 'fast-check';
import { SandboxAnnotations } from '#api/labels';
import { NOW, claim } from './fixtures';
import { FIRST_READY_UNKNOWN, observabilityPatch } from '../../../src/controllers/claim/status';
import { rfc3339Nano } from '../../../src/model';

describe('rfc3339Nano', () => {
  test.each<[number, string]>([
    [NOW, '2026-09-01T12:00:00Z'],
    [NOW + 120, '2026-09-01T12:00:00.12Z'],
    [NOW + 10_100, '2026-09-01T12:00:10.1Z'],
    [NOW + 1, '2026-09-01T12:00:00.001Z'],
  ])('%i -> %s', (ms, text) => {
    expect(rfc3339Nano(ms)).toBe(text);
  });

  test('parses back to the same instant (fast-check)', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), (ms) => {
      expect(Date.parse(rfc3339Nano(ms))).toBe(ms);
    }));
  });
});

describe('observabilityPatch', () => {
  const base = { claim: claim(), firstObservedAtMs: NOW - 50, wasReady: false, isReady: false, now: NOW };

  test('not Ready yet: first-observed waits in memory (no second patch later); a trace context goes at once', () => {
    expect(observabilityPatch(base)).toBeUndefined();
    expect(observabilityPatch({ ...base, traceContext: '{"traceparent":"00-a"}' })).toEqual({
      metadata: { annotations: { [SandboxAnnotations.TRACE_CONTEXT]: '{"traceparent":"00-a"}' } },
    });
  });

  test('Ready in this pass: first-observed and first-ready in the same single patch', () => {
    expect(observabilityPatch({ ...base, isReady: true })).toEqual({
      metadata: { annotations: { [SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]: '2026-09-01T11:59:59.95Z', [SandboxAnnotations.CLAIM_FIRST_READY_AT]: '2026-09-01T12:00:00Z' } },
    });
  });

  test('already Ready before we saw it: unknown, not a made-up time', () => {
    const c = claim({}, { annotations: { [SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]: 'x' } });
    expect(observabilityPatch({ ...base, claim: c, wasReady: true, isReady: true })).toEqual({
      metadata: { annotations: { [SandboxAnnotations.CLAIM_FIRST_READY_AT]: FIRST_READY_UNKNOWN } },
    });
  });

  test('nothing missing, or disabled: no write', () => {
    const c = claim({}, { annotations: { [SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT]: 'x', [SandboxAnnotations.CLAIM_FIRST_READY_AT]: 'y', [SandboxAnnotations.TRACE_CONTEXT]: 't' } });
    expect(observabilityPatch({ ...base, claim: c, isReady: true, traceContext: 'new' })).toBeUndefined();
    expect(observabilityPatch({ ...base, disabled: true, isReady: true })).toBeUndefined();
  });

  test('never overwrites an annotation that is set (fast-check)', () => {
    const keys = [SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT, SandboxAnnotations.CLAIM_FIRST_READY_AT, SandboxAnnotations.TRACE_CONTEXT];
    const trace = fc.option(fc.string({ minLength: 1 }), { nil: undefined });
    fc.assert(fc.property(fc.subarray(keys), fc.boolean(), fc.boolean(), trace, (present, wasReady, isReady, traceContext) => {
      const c = claim({}, { annotations: Object.fromEntries(present.map((k) => [k, 'set'])) });
      const patch = observabilityPatch({ ...base, claim: c, wasReady, isReady, traceContext });
      const written = Object.keys((patch?.metadata as { annotations?: object } | undefined)?.annotations ?? {});
      for (const k of written) expect(present).not.toContain(k);
      if (isReady && !present.includes(SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT)) {
        expect(written).toContain(SandboxAnnotations.CONTROLLER_FIRST_OBSERVED_AT);
      }
    }));
  });
});
