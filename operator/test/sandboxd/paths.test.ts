import { mkdtempSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { shellSyntaxIn, shlexSplit } from '../../src/sandboxd/exec';
import { confine, confineLexically, decodePathParam, isWithin } from '../../src/sandboxd/paths';

const ROOT = '/work/space';
const segment = fc.oneof(
  fc.constantFrom('..', '.', '', 'a', 'b', 'c d', '...', '..a'),
  fc.stringMatching(/^[a-z.]{1,4}$/),
);

/** The depth a path reaches below the root, segment by segment; negative means above it. */
function minDepth(segments: readonly string[]): number {
  let depth = 0;
  let min = 0;
  for (const s of segments) {
    if (s === '..') depth--;
    else if (s !== '.' && s !== '') depth++;
    min = Math.min(min, depth);
  }
  return min;
}

describe('confineLexically', () => {
  test('a result is always the root or below it', () => {
    fc.assert(fc.property(fc.array(segment, { maxLength: 8 }), fc.boolean(), (segments, absolute) => {
      const requested = `${absolute ? '/' : ''}${segments.join('/')}`;
      const result = confineLexically(ROOT, requested);
      if (result.ok) expect(isWithin(ROOT, result.path)).toBe(true);
    }));
  });

  test('refused exactly when ".." climbs above the root at some point', () => {
    fc.assert(fc.property(fc.array(segment, { maxLength: 8 }), (segments) => {
      const result = confineLexically(ROOT, segments.join('/'));
      expect(result.ok).toBe(minDepth(segments) >= 0);
    }));
  });

  test('a path without ".." maps to root + its normalized segments, leading "/" stripped', () => {
    fc.assert(fc.property(fc.array(fc.stringMatching(/^[a-z]{1,5}$/), { maxLength: 6 }), fc.nat(3), (segments, slashes) => {
      const result = confineLexically(ROOT, `${'/'.repeat(slashes)}${segments.join('/')}`);
      expect(result).toEqual({ ok: true, path: path.posix.join(ROOT, ...segments) });
    }));
  });

  test.each([
    ['', ROOT],
    ['/', ROOT],
    ['a/../b', `${ROOT}/b`],
    ['/etc/passwd', `${ROOT}/etc/passwd`],
    ['a/b/', `${ROOT}/a/b`],
  ])('%j resolves to %s', (requested, expected) => {
    expect(confineLexically(ROOT, requested)).toEqual({ ok: true, path: expected });
  });

  test.each(['..', '../x', 'a/../../x', '/../etc/passwd', 'a\0b'])('%j is refused with a reason', (requested) => {
    const result = confineLexically(ROOT, requested);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason.length).toBeGreaterThan(0);
  });

  test('"/workspace" is not inside "/work/space" by prefix accident', () => {
    expect(isWithin('/work/space', '/work/spaces')).toBe(false);
    expect(isWithin('/', '/anything')).toBe(true);
  });
});

describe('confine (symlinks)', () => {
  let base: string;
  let root: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sandboxd-paths-')));
    root = path.join(base, 'root');
    mkdirSync(path.join(root, 'inside'), { recursive: true });
    mkdirSync(path.join(base, 'outside'));
    symlinkSync(path.join(base, 'outside'), path.join(root, 'out'));
    symlinkSync('inside', path.join(root, 'in'));
    symlinkSync('/nonexistent-target-dir', path.join(root, 'dangling'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  test('a link inside the root resolves to its target', async () => {
    expect(await confine(root, 'in/new/file.txt')).toEqual({ ok: true, path: path.join(root, 'inside/new/file.txt') });
  });

  test('a link leaving the root is refused, also for paths below it that do not exist', async () => {
    for (const p of ['out', 'out/x', 'out/deep/er/file']) {
      const result = await confine(root, p);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.reason).toMatch(/symbolic link/);
    }
  });

  test('a missing path under the root is allowed (uploads)', async () => {
    expect(await confine(root, 'x/y/z')).toEqual({ ok: true, path: path.join(root, 'x/y/z') });
  });

  test('a dangling link is not followed out of the root', async () => {
    expect((await confine(root, 'dangling/x')).ok).toBe(true);
  });
});

test('path parameters are decoded twice, as upstream does', () => {
  expect(decodePathParam('a%2Fb')).toBe('a/b');
  expect(decodePathParam('%2541')).toBe('A');
  expect(decodePathParam('bad%zz')).toBe('bad%zz');
});

describe('shlexSplit', () => {
  test.each([
    ['echo hello world', ['echo', 'hello', 'world']],
    ['  a   b  ', ['a', 'b']],
    ['echo \'single quoted\' "double \\"q\\""', ['echo', 'single quoted', 'double "q"']],
    ['a\\ b c', ['a b', 'c']],
    ['x""y', ['xy']],
    ['""', ['']],
  ])('%j', (input, expected) => {
    expect(shlexSplit(input)).toEqual(expected);
  });

  test.each(['echo "open', "echo 'open", 'trailing\\'])('%j fails like shlex', (input) => {
    expect(() => shlexSplit(input)).toThrow();
  });

  test('shell syntax is noticed in argv', () => {
    expect(shellSyntaxIn(['echo', 'a', '|', 'wc'])).toBe('|');
    expect(shellSyntaxIn(['true', '&&', 'false'])).toBe('&&');
    expect(shellSyntaxIn(['echo', '$HOME'])).toBe('$HOME');
    expect(shellSyntaxIn(['echo', '>out.txt'])).toBe('>out.txt');
    expect(shellSyntaxIn(['ls', '-la', 'a-b'])).toBeUndefined();
  });
});
