import { cdk8s, javascript } from 'projen';

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
  minNodeVersion: '20.16.0',
  jsiiVersion: '~6.0.0',
  typescriptVersion: '~6.0.3',
  cdk8sVersion: '2.70.0',
  constructsVersion: '10.4.0',
  peerDeps: ['cdk8s-plus-30@^2.4.10'],
  devDeps: ['cdk8s-cli', 'fast-check@^4.11.0', 'yaml@^2.9.1', 'ts-node@^10.9.2'],
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
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/operator/', '<rootDir>/test/integration/'],
    },
  },
  github: false,
  release: false,
  depsUpgrade: false,
  gitignore: ['/dist/', '.env'],
});

project.synth();
