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

  test('a relative path is refused exactly when ".." climbs above the root at some point', () => {
    fc.assert(fc.property(fc.array(segment, { maxLength: 8 }), (segments) => {
      fc.pre(segments[0] !== '');
      const result = confineLexically(ROOT, segments.join('/'));
      expect(result.ok).toBe(minDepth(segments) >= 0);
    }));
  });

  test('a relative path without ".." maps to root + its normalized segments', () => {
    fc.assert(fc.property(fc.array(fc.stringMatching(/^[a-z]{1,5}$/), { maxLength: 6 }), fc.nat(3), (segments, slashes) => {
      const result = confineLexically(ROOT, segments.join('/'.repeat(slashes + 1)));
      expect(result).toEqual({ ok: true, path: path.posix.join(ROOT, ...segments) });
    }));
  });

  test('an absolute path is taken literally: accepted under the root, refused elsewhere with a reason', () => {
    const names = fc.array(fc.stringMatching(/^[a-z]{1,5}$/), { maxLength: 5 });
    fc.assert(fc.property(names, names, (inside, elsewhere) => {
      expect(confineLexically(ROOT, `${ROOT}/${inside.join('/')}`)).toEqual({ ok: true, path: path.posix.join(ROOT, ...inside) });
      const outside = `/${elsewhere.join('/')}`;
      const result = confineLexically(ROOT, outside);
      if (!isWithin(ROOT, path.posix.normalize(outside)) && outside !== '/') {
        expect(result).toEqual({ ok: false, reason: expect.stringContaining('use a path relative to the workspace') });
      }
    }));
  });

  test('any text, decoded as a path parameter: refused, or the root or below it, normalized', () => {
    const piece = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom('..', '.', '', '/', '//', '\0', '%00', '%2F', '%2E%2E', '%252E%252E%252F', '%zz', ROOT, `${ROOT}/..`, '/work', '/etc'),
    );
    fc.assert(fc.property(fc.array(piece, { maxLength: 8 }), fc.boolean(), (pieces, slash) => {
      const requested = decodePathParam(pieces.join(slash ? '/' : ''));
      const result = confineLexically(ROOT, requested);
      if (requested.includes('\0')) expect(result.ok).toBe(false);
      if (!result.ok) return expect(result.reason.length).toBeGreaterThan(0);
      expect(isWithin(ROOT, result.path)).toBe(true);
      expect(result.path).toBe(path.posix.normalize(result.path).replace(/(.)\/$/, '$1'));
    }));
  });

  test.each([
    ['', ROOT],
    ['/', ROOT],
    // Upstream's Python SDK sends files.list("/") as "%2F": a bare "/" keeps naming the root.
    ['///', ROOT],
    ['a/../b', `${ROOT}/b`],
    ['a/b/', `${ROOT}/a/b`],
    [`${ROOT}/a.txt`, `${ROOT}/a.txt`],
    [`${ROOT}/`, ROOT],
    [`${ROOT}/x/../y`, `${ROOT}/y`],
  ])('%j resolves to %s', (requested, expected) => {
    expect(confineLexically(ROOT, requested)).toEqual({ ok: true, path: expected });
  });

  test.each(['..', '../x', 'a/../../x', '/../etc/passwd', 'a\0b', '/etc/passwd', '//etc/passwd', '/work/spaces/x', `${ROOT}/../x`])('%j is refused with a reason', (requested) => {
    const result = confineLexically(ROOT, requested);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(/use a path relative to the workspace|NUL/);
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
    symlinkSync('..', path.join(root, 'up'));
    symlinkSync('.', path.join(root, 'self'));
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
  /** What the tree above holds: the real directory a name leads to from the root, or where it escapes. */
  function model(segments: readonly string[]): { ok: true; path: string } | { ok: false } | undefined {
    const stack: string[] = [];
    for (const s of segments) {
      if (s === '..') {
        if (stack.pop() === undefined) return undefined; // lexically above the root: not the symlink check's case
      } else if (s !== '.' && s !== '') {
        stack.push(s);
      }
    }
    let real = root;
    for (let i = 0; i < stack.length; i++) {
      const name = stack[i];
      if (real === root && (name === 'out' || name === 'up')) return { ok: false };
      if (real === root && name === 'self') continue;
      if (real === root && (name === 'in' || name === 'inside')) {
        real = path.join(root, 'inside');
        continue;
      }
      return { ok: true, path: path.join(real, ...stack.slice(i)) }; // missing from here on
    }
    return { ok: true, path: real };
  }

  test('symlinks: refused exactly when the real path leaves the root, else that real path', async () => {
    const name = fc.constantFrom('in', 'out', 'up', 'self', 'inside', 'dangling', 'x', '..', '.', '');
    await fc.assert(fc.asyncProperty(fc.array(name, { maxLength: 6 }), fc.boolean(), async (segments, absolute) => {
      const expected = model(segments);
      fc.pre(expected !== undefined && (absolute || segments[0] !== ''));
      const result = await confine(root, `${absolute ? `${root}/` : ''}${segments.join('/')}`);
      if (!expected!.ok) {
        expect(result).toEqual({ ok: false, reason: expect.stringMatching(/symbolic link/) });
      } else {
        expect(result).toEqual(expected);
      }
    }));
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
