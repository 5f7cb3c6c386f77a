import * as fc from 'fast-check';
import {
  RESERVED_PREFIXES,
  SandboxAnnotations,
  SandboxLabels,
  isReservedAnnotationKey,
  isReservedLabelKey,
  withoutReserved,
} from '../../src/api/labels';

const prefix = fc.constantFrom('agents.x-k8s.io/', 'extensions.agents.x-k8s.io/', 'api.agents.x-k8s.io/', 'example.com/', '', 'agents.x-k8s.io.evil/');
const key = fc.tuple(prefix, fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/)).map(([p, n]) => p + n);
const labelMap = fc.dictionary(key, fc.string({ maxLength: 10 }));

describe('reserved-prefix filtering', () => {
  test('every well-known label is reserved', () => {
    for (const value of Object.values(SandboxLabels)) expect(isReservedLabelKey(value)).toBe(true);
  });

  test('a longer prefix such as api.agents.x-k8s.io/ is not reserved (as upstream)', () => {
    expect(isReservedLabelKey('api.agents.x-k8s.io/state')).toBe(false);
    expect(isReservedLabelKey('agents.x-k8s.io.evil/x')).toBe(false);
  });

  test('the trace-context annotation is reserved, though not as a label', () => {
    expect(isReservedAnnotationKey(SandboxAnnotations.TRACE_CONTEXT)).toBe(true);
    expect(isReservedLabelKey(SandboxAnnotations.TRACE_CONTEXT)).toBe(false);
  });

  test('filtering keeps exactly the unreserved keys with their values', () => {
    fc.assert(fc.property(labelMap, (labels) => {
      const kept = withoutReserved(labels, isReservedLabelKey);
      for (const [k, v] of Object.entries(labels)) {
        const reserved = RESERVED_PREFIXES.some((p) => k.startsWith(p));
        if (reserved) expect(kept).not.toHaveProperty([k]);
        else expect(kept[k]).toBe(v);
      }
      expect(Object.keys(kept).every((k) => !isReservedLabelKey(k))).toBe(true);
    }));
  });

  test('filtering is idempotent and does not mutate its input', () => {
    fc.assert(fc.property(labelMap, (labels) => {
      const copy = { ...labels };
      const once = withoutReserved(labels, isReservedAnnotationKey);
      expect(withoutReserved(once, isReservedAnnotationKey)).toEqual(once);
      expect(labels).toEqual(copy);
    }));
  });
});
