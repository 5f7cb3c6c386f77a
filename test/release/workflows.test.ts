/**
 * The GitHub workflows projen generates (build, release, pull-request-lint): actionlint finds nothing
 * in them, the release publishes the operator image under the tag the install bundle points at, and
 * the SDK (sdk/, @cdk8s-agent-sandbox/sdk) and then the MCP server (mcp/, @cdk8s-agent-sandbox/mcp,
 * on exactly that SDK) to npm beside the library, with the release's version.
 * actionlint is built from its Go module on first use and cached (hack/install-actionlint.sh).
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parse } from 'yaml';
import { OPERATOR_IMAGE_REPOSITORY } from '../../src/install/operator-deployment';

const root = path.join(__dirname, '..', '..');
const workflowsDir = path.join(root, '.github', 'workflows');
const workflowFiles = fs.readdirSync(workflowsDir).filter((f) => f.endsWith('.yml')).sort();
const release = parse(fs.readFileSync(path.join(workflowsDir, 'release.yml'), 'utf8'));

test('projen generates the build, release and pull-request-lint workflows', () => {
  expect(workflowFiles).toEqual(['build.yml', 'pull-request-lint.yml', 'release.yml']);
});

test('actionlint reports nothing in .github/workflows', () => {
  // Building it takes about half a minute on a cold Go cache; later runs reuse the binary.
  const actionlint = execFileSync(path.join(root, 'hack', 'install-actionlint.sh'), { encoding: 'utf8', timeout: 600_000 }).trim().split('\n').pop()!;
  const run = spawnSync(actionlint, ['-format', '{{json .}}', ...workflowFiles.map((f) => path.join('.github', 'workflows', f))], { cwd: root, encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(JSON.parse(run.stdout)).toEqual([]);
  expect(run.status).toBe(0);
});

test('pull requests build the operator image (not pushed) after the build job', () => {
  const build = parse(fs.readFileSync(path.join(workflowsDir, 'build.yml'), 'utf8'));
  expect(Object.keys(build.on)).toEqual(['pull_request', 'workflow_dispatch']);
  const job = build.jobs['operator-image'];
  expect(job.needs).toBe('build');
  expect(job.steps.find((s: any) => s.uses?.startsWith('docker/build-push-action@')).with).toMatchObject({ file: 'operator/Dockerfile', push: false });
});

describe('release workflow', () => {
  test('runs by hand only: its release job creates the tag', () => {
    expect(Object.keys(release.on)).toEqual(['workflow_dispatch']);
  });

  test('pushes the operator image for amd64 and arm64, with provenance and an SBOM, tagged v<version> and <version>', () => {
    const job = release.jobs.release_operator_image;
    expect(job.needs).toBe('release');
    expect(job.permissions).toEqual({ contents: 'read', packages: 'write' });
    const uses = job.steps.map((s: any) => s.uses?.split('@')[0]).filter(Boolean);
    expect(uses).toEqual(expect.arrayContaining(['docker/setup-qemu-action', 'docker/setup-buildx-action', 'docker/login-action', 'docker/build-push-action']));
    const build = job.steps.find((s: any) => s.uses?.startsWith('docker/build-push-action@')).with;
    expect(build).toMatchObject({ context: '.', file: 'operator/Dockerfile', platforms: 'linux/amd64,linux/arm64', provenance: true, sbom: true, push: '${{ !inputs.dry_run }}' });
    const version = '${{ steps.version.outputs.version }}';
    // The install bundle's default image (AgentSandboxSystem.DEFAULT_IMAGE) is the first tag.
    expect(build.tags.split('\n')).toEqual([`${OPERATOR_IMAGE_REPOSITORY}:v${version}`, `${OPERATOR_IMAGE_REPOSITORY}:${version}`]);
    expect(build['build-args']).toContain(`VERSION=v${version}`);
    const read = job.steps.find((s: any) => s.id === 'version');
    expect(read.run).toContain('cat dist/packages/version.txt');
  });

  test('the GitHub release (which creates the tag) waits for the packages, the SDK, the MCP server and the image', () => {
    expect(release.jobs.release_github.needs).toEqual(expect.arrayContaining([
      'release', 'release_npm', 'release_maven', 'release_pypi', 'release_nuget', 'release_golang', 'release_operator_image', 'release_sdk_npm', 'release_mcp_npm',
    ]));
  });

  describe.each([
    ['release_sdk_npm', 'sdk', 'cdk8s-agent-sandbox-sdk', 'SDK', ['release'], ['package/dist/index.js', 'package/dist/index.d.ts']],
    // The MCP server depends on exactly the SDK of its release: published only once the SDK is.
    ['release_mcp_npm', 'mcp', 'cdk8s-agent-sandbox-mcp', 'MCP server', ['release', 'release_sdk_npm'], ['package/README.md', 'package/dist/cli.js', 'package/dist/index.js']],
  ])('%s', (id, folder, tarballName, title, needs, files) => {
    test(`publishes ${folder}/ to npm like the library (publib, provenance, NPM_TOKEN), from the tarball the release job packed`, () => {
      const job = release.jobs[id];
      const library = release.jobs.release_npm;
      expect(job.needs).toEqual(needs.length === 1 ? needs[0] : needs);
      expect(job.if).toBe(library.if);
      expect(job.permissions).toEqual({ 'id-token': 'write', 'contents': 'read' });
      const publish = job.steps.find((s: any) => s.name === 'Release');
      const libraryPublish = library.steps.find((s: any) => s.name === 'Release');
      expect(publish.run).toBe(`npx -p publib@latest publib-npm dist/packages/${folder}`);
      const { PUBLIB_DRYRUN: _, ...libraryEnv } = libraryPublish.env;
      expect(publish.env).toEqual(libraryEnv);
      expect(publish.env).toMatchObject({ NPM_CONFIG_PROVENANCE: 'true', NPM_REGISTRY: 'registry.npmjs.org', NPM_DIST_TAG: 'latest' });
      // A dry run publishes nothing: publib-npm does not read PUBLIB_DRYRUN, so the step is skipped and npm's dry run shown.
      expect(publish.if).toBe('${{ !inputs.dry_run }}');
      expect(job.steps.find((s: any) => s.name === 'Dry run').run).toContain('npm publish --dry-run');
      // The one tarball there is this release's, with the built package in it.
      const check = job.steps.find((s: any) => s.name === `Check the ${title} tarball`);
      expect(check.env.TARBALL).toBe(`dist/packages/${folder}/${tarballName}-\${{ steps.version.outputs.version }}.tgz`);
      for (const file of ['package/package.json', 'package/LICENSE', ...files]) expect(check.run).toContain(` ${file}`);
      expect(job.steps.find((s: any) => s.id === 'version').run).toContain('cat dist/packages/version.txt');
    });

    test(`${folder}/package.json publishes publicly (a scoped package is restricted by default, and publib passes no --access)`, () => {
      expect(JSON.parse(fs.readFileSync(path.join(root, folder, 'package.json'), 'utf8')).publishConfig).toEqual({ access: 'public' });
    });
  });

  describe('the tarball check, run as the job runs it on tarballs made here', () => {
    const version = '0.3.0';
    let work: string;
    beforeEach(() => {
      work = fs.mkdtempSync(path.join(os.tmpdir(), 'tarball-check-'));
    });
    afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

    /** dist/packages/mcp/ in `work` holding a tarball of these files (package.json from `manifest`), as npm pack lays it out. */
    function tarball(manifest: object, files = ['LICENSE', 'README.md', 'dist/cli.js', 'dist/index.js', 'dist/index.d.ts'], name = `cdk8s-agent-sandbox-mcp-${version}.tgz`): void {
      const pkg = path.join(work, 'staging', 'package');
      fs.rmSync(path.join(work, 'staging'), { recursive: true, force: true });
      for (const file of files) {
        fs.mkdirSync(path.dirname(path.join(pkg, file)), { recursive: true });
        fs.writeFileSync(path.join(pkg, file), '');
      }
      fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify(manifest, null, 2));
      fs.mkdirSync(path.join(work, 'dist', 'packages', 'mcp'), { recursive: true });
      execFileSync('tar', ['-czf', path.join(work, 'dist', 'packages', 'mcp', name), '-C', path.join(work, 'staging'), 'package']);
    }

    function check(): { status: number | null; output: string } {
      const step = release.jobs.release_mcp_npm.steps.find((s: any) => s.name === 'Check the MCP server tarball');
      const env = Object.fromEntries(Object.entries<string>(step.env).map(([k, v]) => [k, v.replace('${{ steps.version.outputs.version }}', version)]));
      const run = spawnSync('bash', ['-e', '-c', step.run], { cwd: work, env: { ...process.env, ...env }, encoding: 'utf8' });
      return { status: run.status, output: run.stdout + run.stderr };
    }

    const good = { name: '@cdk8s-agent-sandbox/mcp', version, dependencies: { '@cdk8s-agent-sandbox/sdk': version, 'zod': '^4.6.7' } };

    test('passes this release\'s tarball, its version and its SDK dependency the release\'s', () => {
      tarball(good);
      expect(check()).toMatchObject({ status: 0 });
    });

    test('fails on an SDK dependency of another version (negative control of the pin)', () => {
      tarball({ ...good, dependencies: { ...good.dependencies, '@cdk8s-agent-sandbox/sdk': '0.0.0' } });
      expect(check()).toEqual({ status: 1, output: expect.stringContaining('not 0.3.0: {"@cdk8s-agent-sandbox/sdk":"0.0.0"}') });
    });

    test('fails on a package.json of another version, a tarball without the bin, and a second tarball beside it', () => {
      tarball({ ...good, version: '0.2.0' });
      expect(check()).toEqual({ status: 1, output: expect.stringContaining('"version":"0.2.0"') });
      tarball(good, ['LICENSE', 'README.md', 'dist/index.js', 'dist/index.d.ts']);
      expect(check()).toMatchObject({ status: 2, output: expect.stringContaining('package/dist/cli.js: Not found in archive') });
      tarball(good);
      tarball(good, undefined, 'cdk8s-agent-sandbox-mcp-0.2.0.tgz');
      expect(check().status).not.toBe(0);
    });
  });

  test('the release build packs the SDK, then the MCP server, into dist/packages/<folder> with the version the bump gave the library, and unbump resets them', () => {
    const tasks = JSON.parse(fs.readFileSync(path.join(root, '.projen', 'tasks.json'), 'utf8')).tasks;
    expect(tasks.release.steps.map((s: any) => s.spawn).filter(Boolean)).toEqual(['bump', 'build', 'unbump']);
    expect(tasks.build.steps).toContainEqual({ spawn: 'package' });
    // The MCP server's build needs the SDK's (sdk/dist), which the SDK's prepack makes.
    expect(tasks.package.steps.map((s: any) => s.spawn).filter((t: string) => /:pack$/.test(t))).toEqual(['sdk:pack', 'mcp:pack']);
    for (const folder of ['sdk', 'mcp']) {
      expect(tasks[`${folder}:pack`].steps).toContainEqual({ exec: `npm pack --pack-destination ../dist/packages/${folder}`, cwd: folder });
    }
    // After the library's version is set (bump) and after it is reset to 0.0.0 (unbump).
    expect(tasks.bump.steps.slice(-2)).toEqual([{ spawn: 'sdk:version' }, { spawn: 'mcp:version' }]);
    expect(tasks.unbump.steps.slice(-2)).toEqual([{ spawn: 'sdk:version' }, { spawn: 'mcp:version' }]);
    expect(tasks['sdk:version'].steps[0].exec).toMatch(/ build-tools\/package-version\.ts sdk$/);
    expect(tasks['mcp:version'].steps[0].exec).toMatch(/ build-tools\/package-version\.ts mcp @cdk8s-agent-sandbox\/sdk$/);
  });

  test('each publib command reads the folder its job collected the package in (publib reads dist/<language> by default)', () => {
    const dirs: Record<string, string> = { release_npm: 'js', release_maven: 'java', release_pypi: 'python', release_nuget: 'dotnet', release_golang: 'go' };
    for (const [id, dir] of Object.entries(dirs)) {
      const job = release.jobs[id];
      const publish = job.steps.find((s: any) => /publib-/.test(s.run ?? ''));
      expect([id, publish.run]).toEqual([id, expect.stringMatching(new RegExp(` 'dist/packages/${dir}'$`))]);
      expect([id, job.steps.find((s: any) => /^Collect /.test(s.name ?? '')).run]).toEqual([id, 'mv .repo/dist/packages dist/packages']);
    }
  });

  test('every job that downloads the build artifact finds it in dist/packages, where the release job uploaded it', () => {
    const upload = release.jobs.release.steps.find((s: any) => s.uses?.startsWith('actions/upload-artifact@'));
    expect(upload.with.path).toBe('dist/packages');
    const downloads = Object.entries<any>(release.jobs).flatMap(([id, job]) => (job.steps ?? [])
      .filter((s: any) => s.uses?.startsWith('actions/download-artifact@')).map((s: any) => [id, s.with.path]));
    expect(downloads.length).toBeGreaterThanOrEqual(7);
    for (const [id, downloadPath] of downloads) expect([id, downloadPath]).toEqual([id, 'dist/packages']);
    const restores = Object.values<any>(release.jobs).flatMap((job) => (job.steps ?? []).filter((s: any) => /setfacl --restore/.test(s.run ?? '')));
    for (const step of restores) expect(step.run).toBe('cd dist/packages && setfacl --restore=permissions-backup.acl');
  });
});
