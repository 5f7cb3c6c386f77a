/*
 * README.md is a map: short, every link in it and in the pages it points at resolves, its TypeScript
 * install program is examples/install/main.ts and synthesizes, the files it applies are the ones that
 * program writes, its list of `npm run synth` outputs is build-tools/synth.ts's, and its test command
 * is the one .ci/run runs. Each check is a function of text or a directory, so each is also run on a
 * broken fixture to show it can fail.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';
import { RELEASE_FILES } from '../build-tools/synth';

const ROOT = path.resolve(__dirname, '..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const README_MAX_LINES = 300;
const EXAMPLE = 'examples/install/main.ts';

/** The markdown files whose relative links must resolve: README.md, bench/README.md and docs/*.md (not docs/api/). */
function markdownFiles(root: string): string[] {
  const docs = fs.existsSync(path.join(root, 'docs'))
    ? fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
    : [];
  return ['README.md', 'bench/README.md', ...docs].filter((f) => fs.existsSync(path.join(root, f)));
}

/** Lines outside fenced code blocks, with inline code removed (a link inside backticks is not a link). */
function prose(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '');
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, ... */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].replace(/<[^>]+>/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every relative link (and image) in `files` under `root` that names a missing file or a missing heading. */
export function brokenLinks(root: string, files: string[]): string[] {
  const problems: string[] = [];
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    prose(text).forEach((line, i) => {
      for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
        const [rel, anchor] = target.split('#', 2);
        const resolved = rel === '' ? path.join(root, file) : path.resolve(path.dirname(path.join(root, file)), decodeURIComponent(rel));
        const where = `${file}:${i + 1}: ${target}`;
        if (!resolved.startsWith(root + path.sep) && resolved !== root) {
          problems.push(`${where}: outside the repository`);
        } else if (!fs.existsSync(resolved)) {
          problems.push(`${where}: no such file`);
        } else if (anchor !== undefined && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor)) {
          problems.push(`${where}: no heading #${anchor} in ${path.relative(root, resolved)}`);
        }
      }
    });
  }
  return problems;
}

/** The fenced block right after the HTML comment that starts with `marker`. */
function blockAfter(markdown: string, marker: string): string {
  const at = markdown.indexOf(`<!-- ${marker}`);
  if (at < 0) throw new Error(`README.md has no <!-- ${marker} ... --> comment`);
  const m = /\n```[a-z]*\n([\s\S]*?)\n```/.exec(markdown.slice(at));
  if (!m) throw new Error(`no code block after <!-- ${marker}`);
  return m[1] + '\n';
}

/** The block's body of the section `heading` (its first fenced block). */
function firstBlockOfSection(markdown: string, heading: string): string {
  const at = markdown.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`README.md has no "## ${heading}" section`);
  const m = /\n```[a-z]*\n([\s\S]*?)\n```/.exec(markdown.slice(at));
  if (!m) throw new Error(`no code block in "## ${heading}"`);
  return m[1];
}

/** The commands (not comments) of README's "The two commands" block, and whether .ci/run runs each as written. */
export function testCommandMismatch(readme: string, ciRun: string): string[] {
  const commands = firstBlockOfSection(readme, 'The two commands').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const test = commands.filter((c) => /^npm run test/.test(c));
  const problems: string[] = [];
  if (test.length !== 1) problems.push(`README's "The two commands" should have one test command, has ${JSON.stringify(test)}`);
  const ciTest = /^(npm run test\S*)\s*$/m.exec(ciRun)?.[1];
  if (!ciTest) problems.push('.ci/run has no line that is just `npm run test...`');
  if (test.length === 1 && ciTest && test[0] !== ciTest) problems.push(`README's test command is "${test[0]}", .ci/run runs "${ciTest}"`);
  for (const c of commands) {
    if (!new RegExp(`^${c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`, 'm').test(ciRun)) problems.push(`.ci/run does not run README's "${c}"`);
  }
  return problems;
}

/** README's TypeScript install block against the example file: equal, once the import names the package. */
export function exampleMismatch(readmeBlock: string, example: string): string | undefined {
  const expected = example.replace("from '../../src'", "from 'cdk8s-agent-sandbox'");
  if (readmeBlock === expected) return undefined;
  const a = readmeBlock.split('\n');
  const b = expected.split('\n');
  const i = a.findIndex((l, n) => l !== b[n]);
  return `README.md's install program differs from ${EXAMPLE} at its line ${i + 1}:\n  README:  ${a[i]}\n  example: ${b[i]}`;
}

/**
 * The TypeScript blocks of `files` marked `<!-- complete program ... -->`, as virtual files beside
 * each page (`<dir>/readme-check-<page>-<n>.ts`), their `cdk8s-agent-sandbox` import pointed at src/.
 */
export function completePrograms(root: string, files: string[]): { [rel: string]: string } {
  const out: { [rel: string]: string } = {};
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    let n = 0;
    for (const m of text.matchAll(/<!-- complete program[^>]*-->\n```ts\n([\s\S]*?)\n```/g)) {
      const rel = path.join(path.dirname(file), `readme-check-${path.basename(file, '.md')}-${++n}.ts`);
      const src = path.relative(path.dirname(path.join(root, rel)), path.join(root, 'src')) || '.';
      out[rel] = m[1].replace(/from 'cdk8s-agent-sandbox'/g, `from '${src.startsWith('.') ? src : `./${src}`}'`) + '\n';
    }
  }
  return out;
}

/** Type errors in `files` ({ path relative to ROOT: source }), compiled with test/tsconfig.json's options. */
function typeErrors(files: { [rel: string]: string }): { [rel: string]: string[] } {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'test/tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  const virtual = new Map(Object.entries(files).map(([rel, text]) => [path.join(ROOT, rel), text]));
  const host = ts.createCompilerHost(config.options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => virtual.has(path.resolve(f)) || fileExists.call(host, f);
  host.readFile = (f) => virtual.get(path.resolve(f)) ?? readFile.call(host, f);
  host.getSourceFile = (f, lang, ...rest) => (virtual.has(path.resolve(f))
    ? ts.createSourceFile(f, virtual.get(path.resolve(f))!, lang)
    : getSourceFile.call(host, f, lang, ...rest));
  const program = ts.createProgram([...virtual.keys()], { ...config.options, noEmit: true }, host);
  const out: { [rel: string]: string[] } = {};
  for (const [abs] of virtual) {
    const rel = path.relative(ROOT, abs);
    out[rel] = ts.getPreEmitDiagnostics(program, program.getSourceFile(abs))
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  }
  return out;
}

/** Runs a cdk8s program file with CDK8S_OUTDIR set to a fresh directory; returns that directory. */
function synthProgram(file: string): string {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-install-'));
  const before = process.env.CDK8S_OUTDIR;
  process.env.CDK8S_OUTDIR = outdir;
  try {
    jest.isolateModules(() => jest.requireActual(path.join(ROOT, file)));
  } finally {
    if (before === undefined) delete process.env.CDK8S_OUTDIR;
    else process.env.CDK8S_OUTDIR = before;
  }
  return outdir;
}

const readme = read('README.md');

test(`README.md is a map: at most ${README_MAX_LINES} lines, and it opens with what the project is, not a contributor's toolchain`, () => {
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  const firstParagraph = readme.split('\n\n')[1];
  expect(firstParagraph).toMatch(/agent sandboxes/);
  expect(firstParagraph).not.toMatch(/Node 20|Go 1\.|fresh clone|root/);
});

describe('links', () => {
  test('every relative link in README.md, bench/README.md and docs/*.md names a file that exists, and a heading that exists', () => {
    const files = markdownFiles(ROOT);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'bench/README.md', 'docs/operator.md', 'docs/security.md']));
    expect(brokenLinks(ROOT, files)).toEqual([]);
  });

  test('the checker finds a missing file, a missing heading in another page and in the same page, and skips code and URLs (negative control)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-links-'));
    try {
      fs.mkdirSync(path.join(dir, 'docs'));
      fs.writeFileSync(path.join(dir, 'docs/page.md'), '# A page\n\n## Goals, met or not\n\n## Faults: `npm run test:faults`\n');
      fs.writeFileSync(path.join(dir, 'README.md'), [
        '# Title', '', '## Install', '',
        '[ok](docs/page.md) [ok](docs/page.md#goals-met-or-not) [ok](docs/page.md#faults-npm-run-testfaults) [ok](#install)',
        '[url](https://example.com/missing.md) `[code](nowhere.md)`',
        '```', '[fenced](nowhere.md)', '```',
        '[gone](docs/gone.md) [bad anchor](docs/page.md#goals) [bad local](#usage) ![img](bench/x.png)',
      ].join('\n'));
      expect(brokenLinks(dir, markdownFiles(dir))).toEqual([
        'README.md:10: docs/gone.md: no such file',
        'README.md:10: docs/page.md#goals: no heading #goals in docs/page.md',
        'README.md:10: #usage: no heading #usage in README.md',
        'README.md:10: bench/x.png: no such file',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('anchors follow GitHub: punctuation dropped, repeated headings numbered', () => {
    expect([...anchors("## Who owns a template's NetworkPolicy\n## Soak\n### Soak\n```\n## not a heading\n```\n")])
      .toEqual(['who-owns-a-templates-networkpolicy', 'soak', 'soak-1']);
  });
});

describe('the TypeScript install program', () => {
  const block = blockAfter(readme, EXAMPLE);
  const example = read(EXAMPLE);

  test(`README.md shows ${EXAMPLE} as it is (the import names the package)`, () => {
    expect(exampleMismatch(block, example)).toBeUndefined();
    // Negative control: one changed prop is reported, with the line.
    expect(exampleMismatch(block.replace('replicas: 3', 'replicas: 4'), example)).toMatch(/differs from examples\/install\/main\.ts at its line \d+:\n {2}README: .*replicas: 4/);
  });

  test('it and the docs pages\' blocks marked "complete program" type-check; a wrong prop does not (negative control)', () => {
    const broken = 'examples/install/readme-broken.ts';
    const blocks = completePrograms(ROOT, markdownFiles(ROOT));
    expect(Object.keys(blocks).length).toBeGreaterThanOrEqual(2); // docs/constructs.md has two
    const errors = typeErrors({ [EXAMPLE]: example, [broken]: example.replace('replicas: 3', "replicas: '3'"), ...blocks });
    for (const file of [EXAMPLE, ...Object.keys(blocks)]) expect({ file, errors: errors[file] }).toEqual({ file, errors: [] });
    expect(errors[broken].join('\n')).toMatch(/not assignable to type 'number'/);
  }, 120_000);

  test('it synthesizes the install (CRDs, operator, router) and the pool, into the files the README applies', () => {
    const outdir = synthProgram(EXAMPLE);
    try {
      const written = fs.readdirSync(outdir).sort();
      // In the order the README applies them: the install first.
      const applied = [...blockAfter(readme, 'install-commands').matchAll(/-f dist\/(\S+)/g)].map((m) => m[1]);
      expect([...applied].sort()).toEqual(written);
      const kinds = (file: string) => [...fs.readFileSync(path.join(outdir, file), 'utf8').matchAll(/^kind: (\S+)$/gm)].map((m) => m[1]);
      const [system, agents] = applied.map(kinds);
      expect(system.filter((k) => k === 'CustomResourceDefinition')).toHaveLength(4);
      expect(system.filter((k) => k === 'Deployment')).toHaveLength(2); // the operator and the router
      expect(agents).toEqual(expect.arrayContaining(['SandboxTemplate', 'SandboxWarmPool', 'Role', 'RoleBinding']));
      expect(agents).not.toContain('CustomResourceDefinition');
      // The README waits for the operator's Deployment by name.
      expect(fs.readFileSync(path.join(outdir, applied[0]), 'utf8')).toMatch(/kind: Deployment\nmetadata:\n(?: {2}.*\n)*? {2}name: agent-sandbox-controller\n/);
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true });
    }
  }, 60_000);
});

test("README's list of `npm run synth` outputs is build-tools/synth.ts's release files and the examples", () => {
  const listed = blockAfter(readme, 'synth-outputs').split('\n').map((l) => l.split(/\s+#/)[0].trim()).filter(Boolean);
  expect(listed).toEqual([...RELEASE_FILES.map((f) => `dist/${f}`), 'dist/examples/<example>/<chart>.yaml']);
});

describe("README's test command is what .ci/run runs", () => {
  test('the same commands, `npm run test:all` the test command', () => {
    expect(testCommandMismatch(readme, read('.ci/run'))).toEqual([]);
    expect(firstBlockOfSection(readme, 'The two commands')).toMatch(/^npm run test:all$/m);
  });

  test('a README or a .ci/run that changed its test command alone is reported (negative control)', () => {
    const ci = read('.ci/run');
    expect(testCommandMismatch(readme.replace(/^npm run test:all$/m, 'npm run test'), ci))
      .toEqual(expect.arrayContaining(['README\'s test command is "npm run test", .ci/run runs "npm run test:all"']));
    expect(testCommandMismatch(readme, ci.replace(/^npm run test:all$/m, 'npm run test:unit')))
      .toEqual(expect.arrayContaining(['README\'s test command is "npm run test:all", .ci/run runs "npm run test:unit"']));
  });
});
