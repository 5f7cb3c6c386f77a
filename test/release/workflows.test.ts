/**
 * The GitHub workflows projen generates (build, release, pull-request-lint): actionlint finds nothing
 * in them, the release publishes the operator image under the tag the install bundle points at, and
 * the SDK (sdk/, @cdk8s-agent-sandbox/sdk) to npm beside the library, with the release's version.
 * actionlint is built from its Go module on first use and cached (hack/install-actionlint.sh).
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
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

  test('the GitHub release (which creates the tag) waits for the packages, the SDK and the image', () => {
    expect(release.jobs.release_github.needs).toEqual(expect.arrayContaining([
      'release', 'release_npm', 'release_maven', 'release_pypi', 'release_nuget', 'release_golang', 'release_operator_image', 'release_sdk_npm',
    ]));
  });

  test('publishes the SDK to npm like the library (publib, provenance, NPM_TOKEN), from the tarball the release job packed', () => {
    const job = release.jobs.release_sdk_npm;
    const library = release.jobs.release_npm;
    expect(job.needs).toBe('release');
    expect(job.if).toBe(library.if);
    expect(job.permissions).toEqual({ 'id-token': 'write', 'contents': 'read' });
    const publish = job.steps.find((s: any) => s.name === 'Release');
    const libraryPublish = library.steps.find((s: any) => s.name === 'Release');
    expect(publish.run).toBe('npx -p publib@latest publib-npm dist/packages/sdk');
    const { PUBLIB_DRYRUN: _, ...libraryEnv } = libraryPublish.env;
    expect(publish.env).toEqual(libraryEnv);
    expect(publish.env).toMatchObject({ NPM_CONFIG_PROVENANCE: 'true', NPM_REGISTRY: 'registry.npmjs.org', NPM_DIST_TAG: 'latest' });
    // A dry run publishes nothing: publib-npm does not read PUBLIB_DRYRUN, so the step is skipped and npm's dry run shown.
    expect(publish.if).toBe('${{ !inputs.dry_run }}');
    expect(job.steps.find((s: any) => s.name === 'Dry run').run).toContain('npm publish --dry-run');
    // The one tarball there is this release's, with the built package in it.
    const check = job.steps.find((s: any) => s.name === 'Check the SDK tarball');
    expect(check.env.TARBALL).toBe('dist/packages/sdk/cdk8s-agent-sandbox-sdk-${{ steps.version.outputs.version }}.tgz');
    expect(check.run).toContain('package/dist/index.js');
    expect(job.steps.find((s: any) => s.id === 'version').run).toContain('cat dist/packages/version.txt');
  });

  test('the release build packs the SDK into dist/packages/sdk with the version the bump gave the library, and unbump resets it', () => {
    const tasks = JSON.parse(fs.readFileSync(path.join(root, '.projen', 'tasks.json'), 'utf8')).tasks;
    expect(tasks.release.steps.map((s: any) => s.spawn).filter(Boolean)).toEqual(['bump', 'build', 'unbump']);
    expect(tasks.build.steps).toContainEqual({ spawn: 'package' });
    expect(tasks.package.steps).toContainEqual({ spawn: 'sdk:pack' });
    expect(tasks['sdk:pack'].steps).toContainEqual({ exec: 'npm pack --pack-destination ../dist/packages/sdk', cwd: 'sdk' });
    // After the library's version is set (bump) and after it is reset to 0.0.0 (unbump).
    expect(tasks.bump.steps.at(-1)).toEqual({ spawn: 'sdk:version' });
    expect(tasks.unbump.steps.at(-1)).toEqual({ spawn: 'sdk:version' });
    expect(tasks['sdk:version'].steps[0].exec).toContain('build-tools/sdk-version.ts');
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
