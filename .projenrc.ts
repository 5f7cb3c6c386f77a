import { Component, Task, cdk8s, github, javascript, release } from 'projen';
import { TypescriptConfig } from 'projen/lib/javascript';

const project = new cdk8s.ConstructLibraryCdk8s({
  name: 'cdk8s-agent-sandbox',
  description: 'cdk8s constructs and a TypeScript operator for Kubernetes agent sandboxes (agents.x-k8s.io/v1beta1)',
  author: 'cdk8s-agent-sandbox maintainers',
  authorAddress: 'maintainers@cdk8s-agent-sandbox.dev',
  repositoryUrl: 'https://github.com/cdk8s-agent-sandbox/cdk8s-agent-sandbox.git',
  license: 'Apache-2.0',
  defaultReleaseBranch: 'main',
  projenrcTs: true,
  packageManager: javascript.NodePackageManager.NPM,
  // Node 20 reached end of life in April 2026, but it is the only Node these machines (and the
  // workflows) run the tests on, so the packages claim no more than that: engines `node >= 20.16`,
  // nothing said of 22 or 24 until something here tests them.
  minNodeVersion: '20.16.0',
  // 0.x: the API may still change between minor releases. jsii marks every type experimental (the
  // Python wheel says "Development Status :: 4 - Beta", Java @Stability(Experimental)), not stable.
  stability: 'experimental',
  jsiiVersion: '~6.0.0',
  typescriptVersion: '~6.0.3',
  // 2.70.7: the newest 2.70.x that npm, PyPI, Maven Central and the Go module proxy all serve here.
  cdk8sVersion: '2.70.7',
  constructsVersion: '10.4.2',
  // No cdk8s-plus peer: the constructs emit plain ApiObjects (the generated L1s drop fields we need),
  // and Maven Central serves no org.cdk8s:cdk8s-plus-* here, so the Java package could not resolve it.
  // The operator's runtime dependencies are dev deps too: esbuild bundles them into one file.
  // @kubernetes/client-node is the SDK's (sdk/package.json) runtime dependency, installed here for its
  // build and tests; ~1.4: 2.x needs Node >= 22.19. The operator reads kubeconfigs with its KubeConfig, and
  // reaches a kubeconfig's proxy-url through the agents client-node uses (hpagent, socks-proxy-agent).
  // The in-sandbox runtime reads multipart uploads with busboy (streaming, bounded memory). The router
  // forwards plain HTTP requests with undici's pools (6.x: 7 needs Node >= 20.18).
  devDeps: ['cdk8s-cli', 'fast-check@^4.11.0', 'yaml@^2.9.1', 'ts-node@^10.9.2', 'esbuild@^0.28.2', 'prom-client@^15.1.3', 'pino@^10.4.0', '@grpc/grpc-js@^1.14.7', '@kubernetes/client-node@~1.4.0',
    'hpagent@^1.2.0', 'socks-proxy-agent@^8.0.5', 'cdk8s-plus-30@^2.4.10', 'busboy@^1.6.0', '@types/busboy@^1.5.5', 'undici@^6.29.1',
    // The MCP server (mcp/) and the SDK's agent-framework adapters (sdk/src/tools): mcp/ imports the SDK by
    // its package name, linked here from sdk/; the frameworks are the adapters' optional peers, installed
    // here for their tests (ai 6 and openai 6: their next majors need Node 22).
    '@cdk8s-agent-sandbox/sdk@file:sdk', '@modelcontextprotocol/sdk@^1.32.2', 'zod@^4.6.7',
    'openai@^6.30.1', '@anthropic-ai/sdk@^1.16.0', 'ai@^6.0.333', '@langchain/core@^1.4.0'],
  keywords: ['cdk8s', 'kubernetes', 'agent-sandbox', 'sandbox', 'gvisor', 'kata', 'ai-agents'],
  publishToPypi: { distName: 'cdk8s-agent-sandbox', module: 'cdk8s_agent_sandbox' },
  publishToMaven: {
    javaPackage: 'dev.cdk8s.agentsandbox',
    mavenGroupId: 'dev.cdk8s-agent-sandbox',
    mavenArtifactId: 'cdk8s-agent-sandbox',
  },
  publishToGo: { moduleName: 'github.com/cdk8s-agent-sandbox/cdk8s-agent-sandbox-go' },
  publishToNuget: { dotNetNamespace: 'Cdk8s.AgentSandbox', packageId: 'Cdk8s.AgentSandbox' },
  jestOptions: {
    updateSnapshot: javascript.UpdateSnapshot.NEVER,
    jestConfig: {
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/operator/', '<rootDir>/test/integration/', '<rootDir>/test/faults/', '<rootDir>/test/real-nodes/'],
      // The operator image's tag is the package version: 0.0.0 here, the release's in the release build.
      snapshotSerializers: ['<rootDir>/test/release/version-serializer.ts'],
    },
  },
  // Releases: the release workflow, run by hand (Actions > release > Run workflow), bumps the version
  // from the conventional commits since the last tag, creates the tag vX.Y.Z and the GitHub release,
  // then publishes every package and the operator image from it. The first release is 0.1.0 (see
  // nextVersionCommand); 0.x until the API is declared stable. projen's `tagged` trigger does not fit:
  // it also runs on every push to main, and a pushed tag is found already released and skipped.
  release: true,
  releaseTrigger: release.ReleaseTrigger.workflowDispatch(),
  majorVersion: 0,
  nextVersionCommand: 'node -e "process.stdout.write(process.env.VERSION === \'0.0.0\' ? \'minor\' : \'\')"',
  // 12.x runs on Node 20 (13.x needs Node 22).
  bumpPackage: 'commit-and-tag-version@^12',
  workflowNodeVersion: '20.x',
  depsUpgrade: false,
  pullRequestTemplate: false,
  githubOptions: { mergify: false },
  artifactsDirectory: 'dist/packages',
  gitignore: ['/dist/', '.env', '/test-results/'],
});

// jsii prints a full-screen end-of-life banner on Node 20 at every compile.
project.tasks.addEnvironment('JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION', '20');

// Lint the non-jsii TypeScript too: examples, the synth job, the control-plane tools. Each of those
// folders has a tsconfig.json extending test/tsconfig.json, which ESLint's project service picks up.
const devDirs = ['examples', 'tools', 'hack', 'operator', 'sdk', 'mcp'];
// operator/package.json only marks the folder ESM; its dependencies are the root package's.
project.eslint?.addOverride({
  files: ['operator/**/*.ts'],
  rules: { 'import/no-extraneous-dependencies': ['error', { devDependencies: true, packageDir: ['.'] }] },
});
// The SDK is its own package: its sources may use only sdk/package.json's dependencies and nothing
// of the construct library or the operator (it is installed without them); its tests may read src/api.
// Its optional peers (the agent frameworks) only in the adapters of sdk/src/tools/, which are their own
// subpath exports: the core SDK loads without them.
project.eslint?.addOverride({
  files: ['sdk/src/**/*.ts'],
  rules: {
    'import/no-extraneous-dependencies': ['error', { devDependencies: false, peerDependencies: ['**/sdk/src/tools/**'], packageDir: ['./sdk'] }],
    'import/no-restricted-paths': ['error', {
      zones: [{ target: './sdk/src', from: ['./src', './operator', './tools', './test'], message: 'the SDK must not need the construct library or the operator at run time; copy wire names into sdk/src/wire.ts' }],
    }],
  },
});
// The MCP SDK's subpaths (`@modelcontextprotocol/sdk/server/stdio.js`) resolve through a `./*` export
// that ESLint's resolvers do not follow; tsc resolves (and checks) them.
project.eslint?.addOverride({
  files: ['mcp/**/*.ts', 'test/integration/mcp/**/*.ts', 'bench/data-plane/agent-driver/mcp-driver.ts'],
  // The SDK resolves through its exports to sdk/dist, which does not exist before sdk:build (eslint runs
  // first on a fresh clone); tsc checks those imports when mcp/ builds.
  rules: { 'import/no-unresolved': ['error', { ignore: ['^@modelcontextprotocol/sdk/', '^@cdk8s-agent-sandbox/sdk(/|$)'] }] },
});
// The MCP server is its own package too: its sources use only mcp/package.json's dependencies (the SDK
// by its package name, never by path); its tests run here on the root's dev dependencies and may use the
// SDK's test handle.
project.eslint?.addOverride({
  files: ['mcp/src/**/*.ts'],
  rules: {
    'import/no-extraneous-dependencies': ['error', { devDependencies: false, packageDir: ['./mcp'] }],
    'no-restricted-imports': ['error', { patterns: [{ group: ['../*'], message: 'the MCP server uses the SDK by its package name (@cdk8s-agent-sandbox/sdk), and nothing else of this repository' }] }],
  },
});
project.eslint?.addOverride({
  files: ['mcp/test/**/*.ts'],
  rules: { 'import/no-extraneous-dependencies': ['error', { devDependencies: true, packageDir: ['.', './mcp'] }] },
});
// The SDK's tests run in this repository: the root package's dev dependencies (fast-check, jest) serve them.
project.eslint?.addOverride({
  files: ['sdk/test/**/*.ts'],
  rules: { 'import/no-extraneous-dependencies': ['error', { devDependencies: true, packageDir: ['.', './sdk'] }] },
});
// The operator's layers: src/api, then runtime (no sandbox knowledge), then model (wire types and
// object helpers), then one folder per controller. An import back up, or across controllers, fails lint.
// So does an import loop (import/no-cycle; it skips `import type`, which operator/test/architecture.test.ts
// checks too, beside runtime/'s freedom from sandbox vocabulary).
const controllerFolders = ['sandbox', 'template', 'warm-pool', 'claim'];
project.eslint?.addOverride({
  files: ['operator/src/**/*.ts'],
  rules: {
    'import/no-cycle': ['error', { ignoreExternal: true }],
    'import/no-restricted-paths': ['error', {
      zones: [
        {
          target: './operator/src/runtime',
          from: ['./operator/src/model', './operator/src/controllers', './operator/src/router', './operator/src/commands'],
          message: 'runtime/ sits below model/, the controllers and the router',
        },
        { target: './operator/src/model', from: ['./operator/src/controllers', './operator/src/router', './operator/src/commands'], message: 'model/ sits below the controllers and the router' },
        // The router is a layer beside the controllers: it reads runtime/ and model/, never a controller.
        { target: './operator/src/router', from: ['./operator/src/controllers', './operator/src/commands'], message: 'the router sits beside the controllers; shared pieces live in model/ or runtime/' },
        { target: './operator/src/controllers', from: ['./operator/src/router'], message: 'the controllers do not import the router' },
        // The in-sandbox daemon stands alone: it neither uses nor is used by the Kubernetes layers.
        { target: './operator/src/sandboxd', from: ['./src', './operator/src/runtime', './operator/src/model', './operator/src/controllers', './operator/src/router', './operator/src/commands'], message: 'sandboxd/ (the in-sandbox daemon) stands alone' },
        ...controllerFolders.map((folder) => ({
          target: `./operator/src/controllers/${folder}`,
          from: controllerFolders.filter((other) => other !== folder).map((other) => `./operator/src/controllers/${other}`),
          message: 'a controller does not import another controller\'s folder; shared pieces live in model/, runtime/ or beside the folders (controllers/claims-first/, extension-informers.ts)',
        })),
      ],
    }],
  },
});
for (const dir of devDirs) {
  project.eslint?.addLintPattern(dir);
  project.eslint?.allowDevDeps(`${dir}/**`);
}
project.npmignore?.exclude('/examples/', '/build-tools/', '/tools/', '/hack/', '/operator/', '/sdk/', '/mcp/', '/test-results/', '/.ci/');
// jsii-pacmak appends its outdir (package.json's jsii.outdir, our artifactsDirectory) to .npmignore unless
// that exact line is there: written here, packaging leaves the committed file as it is.
project.npmignore?.exclude(project.artifactsDirectory);
// The npm tarball (which every jsii package embeds, the wheel included) holds only the library: an
// allowlist, so a new folder (bench/ results, docs/) stays out without an ignore entry.
// npm adds package.json, README.md and LICENSE itself. test/package/packed-files.test.ts checks it.
project.package.addField('files', ['lib/**/*.js', 'lib/**/*.d.ts', '.jsii', 'API.md']);

const tsNode = 'ts-node --transpile-only';

// API.md is TypeScript; the same reference in each jsii language, with its own spellings.
const docLanguages = ['python', 'java', 'csharp', 'go'];
project.tasks.tryFind('docgen')!.exec(`jsii-docgen ${docLanguages.map((l) => `-l ${l}`).join(' ')} -o docs/api/API.md`);
// docgen leaves `{@link X.y}` as written; this renders each as a link spelled the file's language's way.
project.tasks.tryFind('docgen')!.exec(`${tsNode} hack/docgen-links.ts API.md ${docLanguages.map((l) => `docs/api/API.${l}.md`).join(' ')}`);

// jsii type-checks src/ and jest what tests import; this checks the rest (CLI entry points included).
const typecheck = project.addTask('typecheck', {
  description: 'Type-check examples, build-tools, tools, hack and bench',
  exec: ['examples', 'build-tools', 'tools', 'hack', 'bench'].map((dir) => `tsc --noEmit -p ${dir}/tsconfig.json`).join(' && '),
});
project.testTask.prependSpawn(typecheck);

// The operator: an ESM app outside the jsii library, type-checked with its own tsconfig and bundled
// by esbuild (which also resolves the extensionless imports of src/api, the shared contract).
// The operator imports that contract as `#api/<module>` (`#api/labels`), one alias instead of
// `../../../../src/api/labels`. It is a tsconfig path, not a package.json subpath import: Node and
// esbuild accept an `imports` target only inside the package that declares it, and src/api is
// outside operator/ (ERR_INVALID_PACKAGE_TARGET). What resolves it: tsc and esbuild through these
// paths (esbuild reads them via operator/tsconfig.json, which extends this file; bench/memory's
// bundle too), the operator's jest and the integration tests' jest through moduleNameMapper, and
// ESLint's import resolver through the override below. Nothing runs the operator's sources in plain
// Node: the operator runs as the bundle.
const API_ALIAS = { '#api/*': ['./src/api/*'] };
new TypescriptConfig(project, {
  fileName: 'tsconfig.operator.json',
  include: ['operator/src/**/*.ts', 'operator/test/**/*.ts', 'src/api/**/*.ts', 'bench/memory/probe.ts'],
  compilerOptions: {
    paths: API_ALIAS,
    rootDir: '.',
    module: 'esnext',
    moduleResolution: javascript.TypeScriptModuleResolution.BUNDLER,
    target: 'ES2022',
    lib: ['ES2022'],
    strict: true,
    noEmit: true,
    isolatedModules: true,
    esModuleInterop: true,
    skipLibCheck: true,
    types: ['node', 'jest'],
  },
});
// test/tsconfig.json (and the tools', bench's, hack's that extend it) type-check the integration
// tests, which assemble a router from operator/src/model and operator/src/router: the same alias.
project.tryFindObjectFile('test/tsconfig.json')?.addOverride('compilerOptions.paths', { '#api/*': ['../src/api/*'] });
// ESLint resolves the operator's imports (`#api/...` included) with the operator's own tsconfig, and
// counts `#api/...` as this repository's code (not a package to list in the dependencies).
project.eslint?.addOverride({
  files: ['operator/**/*.ts'],
  settings: {
    'import/internal-regex': '^#api/',
    'import/resolver': { node: {}, typescript: { project: './tsconfig.operator.json', alwaysTryTypes: true } },
  },
} as any);
const operatorBuild = project.addTask('operator:build', {
  description: 'Type-check and bundle the operator to operator/dist/agent-sandbox-operator.mjs (and its chunks/)',
  steps: [
    { exec: 'tsc -p tsconfig.operator.json' },
    // esbuild, with each command in chunks of its own and dependencies the operator never uses left out (see the script).
    { exec: 'node operator/build.mjs' },
  ],
});
project.addTask('operator', {
  description: 'Run the operator from the checkout: npm run operator -- controller --kubeconfig <file>',
  steps: [{ spawn: operatorBuild.name }, { exec: 'node --enable-source-maps --max-semi-space-size=2 --initial-old-space-size=64 operator/dist/agent-sandbox-operator.mjs', receiveArgs: true }],
});
const operatorTests = project.addTask('test:operator', {
  description: 'Operator unit tests (ESM jest)',
  env: { NODE_OPTIONS: '--experimental-vm-modules --no-warnings=ExperimentalWarning' },
  exec: 'jest -c operator/jest.config.mjs --ci --passWithNoTests',
  receiveArgs: true,
});
project.gitignore.exclude('/operator/dist/');

// The TypeScript client SDK (sdk/): its own ESM package, built with tsc to sdk/dist and unit-tested
// in ESM jest (its runtime tests start the runtime from the operator bundle, so that is built first).
const sdkBuild = project.addTask('sdk:build', {
  description: 'Type-check the SDK and its tests, and build it to sdk/dist (ESM + .d.ts)',
  steps: [{ exec: 'tsc -p sdk/test/tsconfig.json' }, { exec: 'tsc -p sdk/tsconfig.json' }],
});
const sdkTests = project.addTask('sdk:test', {
  description: 'SDK unit tests (ESM jest; against the real runtime process on 127.0.0.1)',
  env: { NODE_OPTIONS: '--experimental-vm-modules --no-warnings=ExperimentalWarning' },
  steps: [{ spawn: sdkBuild.name }, { spawn: operatorBuild.name }, { exec: 'jest -c sdk/jest.config.mjs --ci', receiveArgs: true }],
});
project.gitignore.exclude('/sdk/dist/', '/examples/agent-typescript/dist/');
// The SDK and the MCP server are released beside the library, with the release's version: the bump
// gives sdk/package.json and mcp/package.json the version it gives package.json, and pins the MCP
// server's dependency on the SDK to it; unbump takes them back to 0.0.0 (build-tools/package-version.ts).
// Between them the package task packs each (its prepack builds it) into dist/packages/<folder>/, which
// the release job uploads with the rest and release_<folder>_npm publishes (see npmPackageJob below).
/** `<folder>:version`, run by bump and unbump, and `<folder>:pack`, returned: the tasks of a package released to npm. */
function releasedPackage(folder: string, pinned: readonly string[] = []): Task {
  const version = project.addTask(`${folder}:version`, {
    description: `Give ${folder}/package.json the version of package.json${pinned.length > 0 ? `, and its dependency on ${pinned.join(', ')} too` : ''} (the bump and unbump run it)`,
    exec: [`${tsNode} build-tools/package-version.ts ${folder}`, ...pinned].join(' '),
  });
  project.tasks.tryFind('bump')!.spawn(version);
  project.tasks.tryFind('unbump')!.spawn(version);
  return project.addTask(`${folder}:pack`, {
    description: `Build and pack ${folder}/ into dist/packages/${folder}/ (the release publishes it from there)`,
    steps: [{ exec: `mkdir -p dist/packages/${folder}` }, { exec: `npm pack --pack-destination ../dist/packages/${folder}`, cwd: folder }],
  });
}
const sdkPack = releasedPackage('sdk');

// The MCP server (mcp/, @cdk8s-agent-sandbox/mcp, the agent-sandbox-mcp command): its own ESM package on
// the SDK, which it imports by name (the root's node_modules links it to sdk/, so the SDK is built first).
// Its unit tests run its tools against the runtime from the operator bundle; the end-to-end tests with
// real claims are test/integration/mcp/.
const mcpBuild = project.addTask('mcp:build', {
  description: 'Type-check the MCP server and its tests, and build it to mcp/dist (ESM + .d.ts)',
  steps: [{ spawn: sdkBuild.name }, { exec: 'tsc -p mcp/test/tsconfig.json' }, { exec: 'tsc -p mcp/tsconfig.json' }, { exec: 'chmod +x mcp/dist/cli.js' }],
});
const mcpTests = project.addTask('mcp:test', {
  description: 'MCP server unit tests (ESM jest; the official MCP client over in-memory and streamable HTTP transports, tools against the real runtime process)',
  env: { NODE_OPTIONS: '--experimental-vm-modules --no-warnings=ExperimentalWarning' },
  steps: [{ spawn: mcpBuild.name }, { spawn: operatorBuild.name }, { exec: 'jest -c mcp/jest.config.mjs --ci', receiveArgs: true }],
});
project.gitignore.exclude('/mcp/dist/');
// Its dependency on the SDK is exactly the SDK of its release (0.0.0 in the checkout); the package task
// packs it after the SDK, whose prepack has just built sdk/dist, which the MCP server's build needs.
const mcpPack = releasedPackage('mcp', ['@cdk8s-agent-sandbox/sdk']);

// The whole system on this machine: control plane, operator, router, pod runner, a pool and the
// example agent on the SDK (see tools/demo/demo.ts).
project.addTask('demo', {
  description: 'Start everything locally, run the example agent (examples/agent-typescript) through the router, stop everything',
  exec: `${tsNode} tools/demo/demo.ts`,
  // --real-nodes: the same against a real node (root; tools/shared/real-system.ts).
  receiveArgs: true,
});

// The main job: the release bundle and every example, to dist/.
project.addTask('synth', {
  description: 'Synthesize the install bundle (sandbox.yaml, extensions.yaml, sandbox-with-extensions.yaml) and every example to dist/',
  exec: `${tsNode} build-tools/synth.ts`,
  receiveArgs: true,
});

// The local control plane (built from Go modules; see docs/local-control-plane.md).
project.addTask('cluster:build', { description: 'Build or reuse the control-plane binaries', exec: 'hack/build-control-plane.sh' });
project.addTask('cluster:up', { description: 'Start a local control plane (etcd, apiserver, controller-manager, scheduler, KWOK, pod runner; --real-nodes 1 adds a real node)', exec: `${tsNode} tools/control-plane/cli.ts up`, receiveArgs: true });
project.addTask('cluster:down', { description: 'Stop the local control plane started by cluster:up', exec: `${tsNode} tools/control-plane/cli.ts down` });

// Integration tests share one control plane, started by the jest global setup.
// The operator tests there are black-box: they run the bundled operator, so build it first.
const integration = project.addTask('test:integration', {
  description: 'Integration tests against a real local control plane (builds the operator bundle first)',
  steps: [{ spawn: operatorBuild.name }, { exec: 'jest -c test/integration/jest.config.js --ci --runInBand', receiveArgs: true }],
});

// The fault suite: its own control plane, whose processes (and the operator's) it kills and
// restarts; the summary goes to test-results/faults.json and faults.md.
const faults = project.addTask('test:faults', {
  description: 'Fault injection against a real local control plane and the real operator (builds the operator bundle first)',
  steps: [{ spawn: operatorBuild.name }, { exec: 'jest -c test/faults/jest.config.js --ci --runInBand', receiveArgs: true }],
});

// The real-node suite: a control plane with a real node (kubelet, containerd, runc, gVisor, kube-proxy,
// kube-router), the operator image built from operator/Dockerfile, the platform applied with kubectl.
// Needs root; its global setup builds or reuses the node binaries and images (hack/build-real-node.sh,
// hack/build-images.sh).
const realNodes = project.addTask('test:real-nodes', {
  description: 'End-to-end on a real node: runc and gVisor sandboxes, NetworkPolicy, hardening, suspend/resume, SDKs (root)',
  exec: 'jest -c test/real-nodes/jest.config.js --ci --runInBand',
  receiveArgs: true,
});
project.addTask('node:build', {
  description: 'Build or reuse the real-node binaries (gVisor, kube-router, local-path-provisioner, pause) and images (operator, Python sandbox)',
  exec: 'hack/build-images.sh "$(hack/build-real-node.sh | tail -1)"',
});

// The jsii bindings: build the Python, Java and Go packages and use the Python one for real.
const bindings = project.addTask('test:bindings', {
  description: 'Build the Python, Java and Go packages with jsii-pacmak and synthesize a chart from Python',
  exec: 'test/bindings/run.sh',
});

// `npx projen build` should not try .NET (no SDK on these machines): JS plus the checked bindings.
project.packageTask.reset();
project.packageTask.spawn(project.tasks.tryFind('package:js')!);
project.packageTask.spawn(sdkPack);
project.packageTask.spawn(mcpPack);

// The operator image, multi-arch, pushed with the packages by the release workflow and tagged with the
// release (v0.1.0 and 0.1.0): the install bundle's default image is v<package version>
// (src/install/operator-deployment.ts). The GitHub release, which creates the tag, waits for it.
const operatorImage = 'ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator';
// Each added publish job runs when projen's do: the release job made a new tag from the newest commit.
const releaseCondition = "needs.release.outputs.tag_exists != 'true' && needs.release.outputs.latest_commit == github.sha";
project.release?.addJobs({
  release_operator_image: {
    name: 'Publish the operator image to ghcr.io',
    needs: ['release'],
    runsOn: ['ubuntu-latest'],
    permissions: { contents: github.workflows.JobPermission.READ, packages: github.workflows.JobPermission.WRITE },
    if: releaseCondition,
    steps: [
      { name: 'Checkout', uses: 'actions/checkout@v5' },
      { name: 'Download build artifacts', uses: 'actions/download-artifact@v5', with: { 'artifact-ids': '${{ needs.release.outputs.artifact_id }}', 'path': 'dist/packages' } },
      { name: 'Read the released version', id: 'version', run: 'echo "version=$(cat dist/packages/version.txt)" >> "$GITHUB_OUTPUT"' },
      { name: 'Set up QEMU (arm64 on amd64)', uses: 'docker/setup-qemu-action@v3' },
      { name: 'Set up Docker Buildx', uses: 'docker/setup-buildx-action@v3' },
      { name: 'Log in to ghcr.io', uses: 'docker/login-action@v3', with: { registry: 'ghcr.io', username: '${{ github.actor }}', password: '${{ secrets.GITHUB_TOKEN }}' } },
      {
        name: 'Build and push',
        uses: 'docker/build-push-action@v6',
        with: {
          'context': '.',
          'file': 'operator/Dockerfile',
          'platforms': 'linux/amd64,linux/arm64',
          'push': '${{ !inputs.dry_run }}',
          'provenance': true,
          'sbom': true,
          'build-args': 'VERSION=v${{ steps.version.outputs.version }}\nGIT_COMMIT=${{ github.sha }}',
          'labels': 'org.opencontainers.image.source=${{ github.server_url }}/${{ github.repository }}',
          'tags': `${operatorImage}:v\${{ steps.version.outputs.version }}\n${operatorImage}:\${{ steps.version.outputs.version }}`,
        },
      },
    ],
  },
});
// Pull requests build the image too (amd64 only, not pushed): the Dockerfile is checked where Docker runs.
project.github!.tryFindWorkflow('build')!.addJobs({
  'operator-image': {
    name: 'Build the operator image',
    needs: ['build'],
    runsOn: ['ubuntu-latest'],
    permissions: { contents: github.workflows.JobPermission.READ },
    if: '${{ !needs.build.outputs.self_mutation_happened }}',
    steps: [
      { name: 'Checkout', uses: 'actions/checkout@v5', with: { ref: '${{ github.event.pull_request.head.ref }}', repository: '${{ github.event.pull_request.head.repo.full_name }}' } },
      { name: 'Set up Docker Buildx', uses: 'docker/setup-buildx-action@v3' },
      { name: 'Build', uses: 'docker/build-push-action@v6', with: { context: '.', file: 'operator/Dockerfile', platforms: 'linux/amd64', push: false } },
    ],
  },
});
/**
 * The job that publishes a package packed by `<folder>:pack` to npm, as the library's release_npm does
 * (publib, provenance, the NPM_TOKEN secret), from the tarball the release job made, after `needs`.
 * It first checks that the folder holds exactly this release's tarball, with `files` in it, and that
 * its package.json has the release's version, as have its dependencies on `pinned`. publib-npm does
 * not read PUBLIB_DRYRUN: a dry run skips it and shows what npm would publish.
 */
interface NpmPackageJobOptions {
  readonly needs: string[];
  /** What the tarball must hold, relative to the package. */
  readonly files: string[];
  /** Dependencies whose version must be the release's. */
  readonly pinned?: string[];
}
function npmPackageJob(folder: string, packageName: string, title: string, options: NpmPackageJobOptions): github.workflows.Job {
  const version = '${{ steps.version.outputs.version }}';
  const env = { TARBALL: `dist/packages/${folder}/${packageName.replace(/^@/, '').replace('/', '-')}-${version}.tgz`, VERSION: version };
  // The tarball's package.json, its version and each pinned dependency's: the release's, or the names of those that are not.
  const versions = 'const p = JSON.parse(require("fs").readFileSync(0, "utf8")); '
    + 'const wrong = [["version", p.version], ...process.argv.slice(1).map((d) => [d, (p.dependencies || {})[d]])].filter(([, v]) => v !== process.env.VERSION); '
    + 'if (wrong.length > 0) { console.error(`not ${process.env.VERSION}: ${JSON.stringify(Object.fromEntries(wrong))}`); process.exit(1); }';
  return {
    name: `Publish the ${title} (${packageName}) to npm`,
    needs: options.needs,
    runsOn: ['ubuntu-latest'],
    permissions: { idToken: github.workflows.JobPermission.WRITE, contents: github.workflows.JobPermission.READ },
    if: releaseCondition,
    tools: { node: { version: '20.x' } },
    steps: [
      github.WorkflowSteps.downloadArtifact({ name: 'Download build artifacts', with: { artifactIds: ['${{ needs.release.outputs.artifact_id }}'], path: 'dist/packages' } }),
      { name: 'Restore build artifact permissions', run: 'cd dist/packages && setfacl --restore=permissions-backup.acl', continueOnError: true },
      { name: 'Read the released version', id: 'version', run: 'echo "version=$(cat dist/packages/version.txt)" >> "$GITHUB_OUTPUT"' },
      {
        // publib publishes every tarball in the folder: there must be one, of this release's version.
        name: `Check the ${title} tarball`,
        env,
        run: [
          `ls -l dist/packages/${folder}`,
          `[ "$(ls dist/packages/${folder})" = "$(basename "$TARBALL")" ]`,
          `tar -tzf "$TARBALL" ${options.files.map((f) => `package/${f}`).join(' ')}`,
          `tar -xzOf "$TARBALL" package/package.json | node -e '${versions}'${(options.pinned ?? []).map((d) => ` ${d}`).join('')}`,
        ].join(' && '),
      },
      { name: 'Dry run', if: '${{ inputs.dry_run }}', env: { TARBALL: env.TARBALL }, run: 'npm publish --dry-run --tag latest "$TARBALL"' },
      {
        name: 'Release',
        if: '${{ !inputs.dry_run }}',
        env: {
          NPM_DIST_TAG: 'latest',
          NPM_REGISTRY: 'registry.npmjs.org',
          NPM_CONFIG_PROVENANCE: 'true',
          NPM_TOKEN: '${{ secrets.NPM_TOKEN }}',
        },
        run: `npx -p publib@latest publib-npm dist/packages/${folder}`,
      },
    ],
  };
}
// The MCP server depends on exactly the SDK of its release: it is published once the SDK is.
project.release?.addJobs({
  release_sdk_npm: npmPackageJob('sdk', '@cdk8s-agent-sandbox/sdk', 'SDK', {
    needs: ['release'],
    files: ['package.json', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'],
  }),
  release_mcp_npm: npmPackageJob('mcp', '@cdk8s-agent-sandbox/mcp', 'MCP server', {
    needs: ['release', 'release_sdk_npm'],
    files: ['package.json', 'LICENSE', 'README.md', 'dist/cli.js', 'dist/index.js', 'dist/index.d.ts'],
    pinned: ['@cdk8s-agent-sandbox/sdk'],
  }),
});
const releaseWorkflow = project.github!.tryFindWorkflow('release')!;
releaseWorkflow.file!.addToArray('jobs.release_github.needs', 'release_operator_image');
releaseWorkflow.file!.addToArray('jobs.release_github.needs', 'release_sdk_npm');
releaseWorkflow.file!.addToArray('jobs.release_github.needs', 'release_mcp_npm');
// projen's publish jobs download the build artifact (dist/packages' contents) to dist/ but read it from
// dist/packages/ (artifactsDirectory): download it where they read it, and give publib, which reads
// dist/<language> by default, the folder the job collected its package in. They exist from Release's preSynthesize.
const publibDirs: Record<string, string> = { 'publib-npm': 'js', 'publib-maven': 'java', 'publib-pypi': 'python', 'publib-nuget': 'dotnet', 'publib-golang': 'go' };
new (class extends Component {
  public preSynthesize() {
    for (const [id, job] of Object.entries(releaseWorkflow.jobs)) {
      if (!('steps' in job) || !job.steps.some((step) => step.uses?.startsWith('actions/download-artifact@') && step.with?.path === 'dist')) continue;
      releaseWorkflow.updateJob(id, {
        ...job,
        steps: job.steps.map((step) => step.uses?.startsWith('actions/download-artifact@') ? { ...step, with: { ...step.with, path: 'dist/packages' } }
          : step.run === 'cd dist && setfacl --restore=permissions-backup.acl' ? { ...step, run: 'cd dist/packages && setfacl --restore=permissions-backup.acl' }
            : publibCommand(step.run) ? { ...step, run: `${step.run} 'dist/packages/${publibDirs[publibCommand(step.run)!]}'` } : step),
      });
    }
  }
})(project);

/** The publib command a step runs with no folder (projen's `npx '-p' 'publib@...' 'publib-npm'`), if any. */
function publibCommand(run: string | undefined): string | undefined {
  const match = /^npx '-p' 'publib@[^']*' '(publib-[a-z]+)'$/.exec(run ?? '');
  return match && match[1] in publibDirs ? match[1] : undefined;
}

// The benchmark: ours vs the upstream Go controller vs a two-write floor (see bench/README.md).
project.addTask('bench', {
  description: 'Side-by-side benchmark on fresh local control planes; results to bench/results/',
  exec: `${tsNode} bench/run.ts`,
  receiveArgs: true,
});
// Real nodes against KWOK in one run: cold create → Ready under runc and gVisor, the runtime
// injection's cost, warm claim → first result through the router (root; results to bench/results/).
project.addTask('bench:real-nodes', {
  description: 'Real node vs KWOK: cold create under runc and gVisor, injection cost, warm claim to first result (root)',
  exec: `${tsNode} bench/real-nodes.ts`,
  receiveArgs: true,
});
// Idle sandboxes: resume latency (KWOK, real node runc and gVisor) and the reservations an idle policy gives back in churn.
project.addTask('bench:idle', {
  description: 'Idle suspend and resume on request: request → first byte after a suspension, reservations given back in churn (root for real nodes)',
  exec: `${tsNode} bench/idle.ts`,
  receiveArgs: true,
});
// Heap per 1,000 cached Sandboxes in each cache shape (no cluster): results to bench/results/memory-*.
project.addTask('bench:memory', {
  description: 'Heap per 1,000 cached Sandboxes and their Pods, per cache shape; results to bench/results/',
  exec: `${tsNode} bench/memory/run.ts`,
  receiveArgs: true,
});
// Its smoke mode keeps the harness from rotting: a few claims per controller, no timing asserts.
const benchSmoke = project.addTask('bench:smoke', {
  description: 'A few claims against each controller through the benchmark harness',
  exec: 'bench/smoke.sh',
});

// Everything, in the order a change should be checked: compile (jsii + docs), unit tests and lint,
// integration tests on the real control plane, then the other-language bindings.
const all = project.addTask('test:all', { description: 'The whole test suite (what CI runs)' });
all.spawn(project.tasks.tryFind('compile')!);
all.spawn(project.tasks.tryFind('post-compile')!);
all.spawn(project.testTask);
all.spawn(operatorTests);
all.spawn(sdkTests);
all.spawn(mcpTests);
all.spawn(integration);
all.spawn(faults);
all.spawn(bindings);
all.spawn(benchSmoke);
// Last: it needs root, and a failure here must not keep the suites before it from reporting.
all.spawn(realNodes);

project.synth();
