import fc from 'fast-check';
import { formatMicroTime, parseKubeTime } from '../../src/runtime/micro-time';

describe('formatMicroTime', () => {
  test('writes exactly six fractional digits in UTC', () => {
    expect(formatMicroTime(new Date(Date.UTC(2026, 10, 29, 17, 0, 0, 123)))).toBe('2026-11-29T17:00:00.123000Z');
    expect(formatMicroTime(new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 0)))).toBe('2026-01-01T00:00:00.000000Z');
  });

  test('any date: the MicroTime shape the API server accepts, and it reads back to the same millisecond', () => {
    fc.assert(fc.property(fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), (date) => {
      const text = formatMicroTime(date);
      expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      expect(parseKubeTime(text)).toBe(date.getTime());
    }));
  });
});

describe('parseKubeTime', () => {
  test.each([
    ['2026-11-29T17:00:00Z', Date.UTC(2026, 10, 29, 17)],
    ['2026-11-29T17:00:00.5Z', Date.UTC(2026, 10, 29, 17, 0, 0, 500)],
    ['2026-11-29T17:00:00.123456789Z', Date.UTC(2026, 10, 29, 17, 0, 0, 123)],
    ['2026-11-29T19:00:00.123000+02:00', Date.UTC(2026, 10, 29, 17, 0, 0, 123)],
    ['2026-11-29t17:00:00z', Date.UTC(2026, 10, 29, 17)],
  ])('%s', (text, ms) => {
    expect(parseKubeTime(text)).toBe(ms);
  });

  test.each(['', 'yesterday', '2026-11-29 17:00:00Z', '2026-11-29T17:00Z', '2026-13-40T17:00:00Z'])('rejects %j', (text) => {
    expect(parseKubeTime(text)).toBeUndefined();
  });
});
