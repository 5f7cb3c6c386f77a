/**
 * Building and packaging must leave the git tree as committed: the GitHub build workflow fails on any
 * change ("Find mutations"), the release task on `git diff --exit-code`, and .ci/run runs
 * hack/check-clean-tree.sh after its build and package steps. Here: that script, on small git
 * repositories, and the one write packaging used to make (jsii-pacmak appending its outdir to
 * .npmignore), against the committed .npmignore.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');
const script = path.join(root, 'hack', 'check-clean-tree.sh');

let work: string;
beforeEach(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'clean-tree-'));
});
afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): void {
  const r = spawnSync('git', ['-c', 'user.email=test@example.com', '-c', 'user.name=test', ...args], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
}

/** A repository with one committed file and a .gitignore for dist/. */
function repo(): string {
  const dir = path.join(work, 'repo');
  fs.mkdirSync(dir);
  git(dir, 'init', '-q');
  fs.writeFileSync(path.join(dir, 'README.md'), 'hello\n');
  fs.writeFileSync(path.join(dir, '.gitignore'), '/dist/\n');
  git(dir, 'add', 'README.md', '.gitignore');
  git(dir, 'commit', '-q', '-m', 'first');
  return dir;
}

function check(dir: string) {
  const r = spawnSync(script, [dir], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('hack/check-clean-tree.sh', () => {
  test('passes on a tree as committed, ignored build output included', () => {
    const dir = repo();
    fs.mkdirSync(path.join(dir, 'dist', 'packages'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'dist', 'packages', 'a.tgz'), 'x');
    expect(check(dir)).toMatchObject({ status: 0, stdout: 'check-clean-tree: the work tree is clean\n' });
  });

  test('negative control: fails on a stray file, listing it (even in a new folder)', () => {
    const dir = repo();
    fs.mkdirSync(path.join(dir, 'out', 'deep'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'out', 'deep', 'stray.txt'), 'x');
    const r = check(dir);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('?? out/deep/stray.txt');
  });

  test('negative control: fails on a changed or deleted committed file', () => {
    const dir = repo();
    fs.appendFileSync(path.join(dir, 'README.md'), 'more\n');
    fs.rmSync(path.join(dir, '.gitignore'));
    const r = check(dir);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(' M README.md');
    expect(r.stderr).toContain(' D .gitignore');
  });

  test('fails with exit 2 outside a git work tree', () => {
    const r = check(work);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('is not a git work tree');
  });
});

describe('.npmignore', () => {
  // jsii-pacmak, before packing with package.json's jsii.outdir, adds that folder to .npmignore unless
  // the exact line is there (updateAllNpmIgnores); projen writes the line (.projenrc.ts).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { updateAllNpmIgnores } = require('jsii-pacmak/lib/npm-modules');
  const outdir: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).jsii.outdir;
  const committed = fs.readFileSync(path.join(root, '.npmignore'), 'utf8');

  async function afterPacmak(npmignore: string): Promise<string> {
    fs.writeFileSync(path.join(work, '.npmignore'), npmignore);
    await updateAllNpmIgnores([{ moduleDirectory: work, outputDirectory: path.join(work, outdir) }]);
    return fs.readFileSync(path.join(work, '.npmignore'), 'utf8');
  }

  test('jsii-pacmak finds nothing to add to the committed file', async () => {
    expect(outdir).toBe('dist/packages');
    expect(await afterPacmak(committed)).toBe(committed);
  });

  test('negative control: without the outdir line it appends one', async () => {
    const without = committed.split('\n').filter((line) => line !== outdir).join('\n');
    expect(without).not.toBe(committed);
    expect(await afterPacmak(without)).toContain(`# Exclude jsii outdir\n${outdir}\n`);
  });
});
