/**
 * Cases the construct props fuzzer (constructs.fuzz.test.ts) found, as plain tests: each crashed
 * with a TypeError, was accepted and rendered into a manifest the API server rejects or prunes, or
 * failed without naming the prop. Wrong types are what a jsii caller (Python, say) can pass.
 */
import { Duration, Testing } from 'cdk8s';
import { NetworkPolicyManagement } from '../../src/api/enums';
import { SandboxClaim } from '../../src/claim';
import { AgentSandboxSystem } from '../../src/install';
import { Sandbox } from '../../src/sandbox';
import { SandboxTemplate } from '../../src/template';
import { SandboxVolume } from '../../src/volume';
import { SandboxWarmPool } from '../../src/warm-pool';

const image = 'python:3.12-slim';

function synth(build: (chart: any) => void): () => void {
  return () => {
    const chart = Testing.chart();
    build(chart);
    Testing.synth(chart);
  };
}
const sandbox = (props: any) => synth((chart) => new Sandbox(chart, 'sb', { metadata: { name: 'sb' }, containers: [{ image }], ...props }));

/** Throws a plain Error (not a TypeError) matching `message`. */
function expectError(fn: () => void, message: RegExp): void {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).constructor).toBe(Error);
  expect((error as Error).message).toMatch(message);
}

describe('wrong types are reported by field, not rendered or crashed on', () => {
  test('interop props given plain values (review: TypeError x._validate / r._check is not a function)', () => {
    expectError(sandbox({ tolerations: {} }), /\] tolerations: must be a list of tolerations/);
    expectError(sandbox({ tolerations: [null] }), /tolerations\[0\]: must be a toleration/);
    expectError(sandbox({ serviceAccount: 'agent' }), /serviceAccount: must be a ServiceAccount: pass a construct that defines one .* or refer to it by name with ObjectRef\.fromName/);
    expectError(sandbox({ imagePullSecrets: ['regcred'] }), /imagePullSecrets\[0\]: must be a Secret: pass a construct/);
    expectError(sandbox({ containers: [{ image, envFrom: [{ secret: 'x' }] }] }), /containers\[0\]\.envFrom\[0\]: must be an EnvFrom/);
    expectError(sandbox({ containers: [{ image, envValues: { A: 'x' } }] }), /containers\[0\]\.envValues\["A"\]: must be an EnvValue/);
    expectError(sandbox({ containers: [{ image, livenessProbe: { path: '/' } }] }), /containers\[0\]\.livenessProbe: must be a Probe/);
  });

  test('a bad toleration or node selector entry is reported once (the merged checks ran twice)', () => {
    let message = '';
    try {
      sandbox({ tolerations: [{ key: 'a', effect: 'Never' }], nodeSelector: { 'bad key': 'x' } })();
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message.match(/tolerations\[0\]\.effect/g)).toHaveLength(1);
    expect(message.match(/nodeSelector\["bad key"\]/g)).toHaveLength(1);
  });

  test('container command given as a string', () => {
    expectError(sandbox({ containers: [{ image, command: 'sleep 1' }] }), /spec\.podTemplate\.spec\.containers\[0\]\.command: must be a list, got "sleep 1"/);
  });

  test('container env value given as a number', () => {
    expectError(sandbox({ containers: [{ image, env: { A: 5 } }] }), /containers\[0\]\.env: the value of "A" must be a string, got 5; quote numbers and booleans/);
  });

  test('container ports given as a string (was: TypeError forEach is not a function)', () => {
    expectError(sandbox({ containers: [{ image, ports: '8080' }] }), /containers\[0\]\.ports: must be a list, got "8080"/);
  });

  test('container image given as a number (was: TypeError trim is not a function)', () => {
    expectError(sandbox({ containers: [{ image: 42 }] }), /containers\[0\]\.image: must be a non-empty image reference/);
  });

  test('imagePullPolicy outside the enum', () => {
    expectError(sandbox({ containers: [{ image, imagePullPolicy: 'Sometimes' }] }), /containers\[0\]\.imagePullPolicy: "Sometimes" is not allowed; use one of Always, IfNotPresent, Never/);
  });

  test('pod annotation value given as a boolean', () => {
    expectError(sandbox({ podAnnotations: { note: true } }), /podAnnotations: the value of "note" must be a string, got true/);
  });

  test('terminationGracePeriod of a fractional second names the prop (was: cdk8s error without it)', () => {
    expectError(sandbox({ terminationGracePeriod: Duration.millis(1500) }), /terminationGracePeriod: must be a whole number of seconds/);
    expectError(sandbox({ terminationGracePeriod: 30 }), /terminationGracePeriod: must be a Duration, got number 30; use a Duration such as Duration.seconds\(30\)/);
  });
});

describe('values the API server rejects fail at synth', () => {
  test('a Sandbox name that is not a DNS subdomain, without a Service', () => {
    expectError(sandbox({ metadata: { name: 'Bad_Name' } }), /metadata\.name: "Bad_Name" must consist of lowercase letters/);
  });

  test('volume names and sources', () => {
    expectError(sandbox({ volumes: [SandboxVolume.emptyDir('Data_1')] }), /volumes\[0\]\.name: "Data_1" must consist of lowercase letters/);
    expectError(sandbox({ volumes: [SandboxVolume.emptyDir('data', { sizeLimit: 'lots' })] }), /volumes\[0\]\.sizeLimit: "lots" is not a Kubernetes quantity/);
    expectError(sandbox({ volumes: [SandboxVolume.secret('data', 'My_Secret')] }), /volumes\[0\]: "My_Secret" must consist of lowercase letters/);
  });

  test('volume claim template access modes and volume mode', () => {
    expectError(sandbox({ volumeClaimTemplates: [{ name: 'work', storage: '1Gi', accessModes: ['Sometimes'] }] }),
      /volumeClaimTemplates\[0\]\.accessModes: "Sometimes" is not an access mode; use ReadWriteOnce/);
    expectError(sandbox({ volumeClaimTemplates: [{ name: 'work', storage: '1Gi', volumeMode: 'block' }] }), /volumeMode: "block" is not a volume mode; use Filesystem or Block/);
  });

  test('node selector, tolerations, service account, fsGroup and user IDs', () => {
    expectError(sandbox({ nodeSelector: { 'bad key': 'x' } }), /nodeSelector\["bad key"\]: key "bad key" must be a name/);
    expectError(sandbox({ tolerations: [{ key: 'gpu', effect: 'NoRun' }] }), /tolerations\[0\]\.effect: "NoRun" must be one of NoSchedule, PreferNoSchedule, NoExecute/);
    expectError(sandbox({ serviceAccountName: 'Agent_SA' }), /serviceAccountName: "Agent_SA"/);
    expectError(sandbox({ security: { fsGroup: -1 } }), /security\.fsGroup: -1 is not a user or group ID; use a whole number from 0 to 2147483647/);
    expectError(sandbox({ containers: [{ image, security: { runAsUser: 1.5 } }] }), /containers\[0\]\.security\.runAsUser: 1\.5 is not a user or group ID/);
  });

  test('an empty or unknown warm pool update strategy (was: silently dropped or rendered)', () => {
    const pool = (updateStrategy: any) => synth((chart) => new SandboxWarmPool(chart, 'pool', { template: SandboxTemplate.fromName('t'), updateStrategy }));
    expectError(pool(''), /updateStrategy: "" is not an update strategy; use one of Recreate, OnReplenish/);
    expectError(pool('running'), /updateStrategy: "running" is not an update strategy/);
  });
});

describe('SandboxTemplate network management', () => {
  test('a management outside the enum is named (was: treated as Unmanaged)', () => {
    expectError(synth((chart) => new SandboxTemplate(chart, 'tpl', { containers: [{ image }], network: { management: 'managed' as NetworkPolicyManagement } })),
      /network\.management: "managed" is not allowed; use one of Managed, Unmanaged/);
  });

  test('a bad template name with a Git-owned policy names metadata.name (was: TypeError in the name hash)', () => {
    expectError(synth((chart) => new SandboxTemplate(chart, 'tpl', {
      metadata: { name: {} as string }, containers: [{ image }], network: { management: NetworkPolicyManagement.UNMANAGED },
    })), /metadata\.name: must be a string, got an object/);
  });
});

describe('SandboxClaim', () => {
  test('podAnnotations given as a number', () => {
    expectError(synth((chart) => new SandboxClaim(chart, 'claim', { warmPool: SandboxWarmPool.fromName('pool'), podAnnotations: 7 as any })),
      /podAnnotations: must be a map of strings such as \{ team: "ml" \}, got 7/);
  });
});

describe('AgentSandboxSystem', () => {
  const system = (props: any) => synth((chart) => new AgentSandboxSystem(chart, 'system', props));

  test('createNamespace and extensions must be booleans (was: any truthy value accepted)', () => {
    expectError(system({ createNamespace: {} }), /createNamespace: must be true or false, got \{\}/);
    expectError(system({ extensions: 'no' }), /extensions: must be true or false, got "no"/);
  });

  test('image given as a boolean', () => {
    expectError(system({ image: true }), /image: true must be a non-empty image reference/);
  });

  test('a controller option given as null (was: TypeError in formatLabelList)', () => {
    expectError(system({ controller: { sandboxConcurrentWorkers: null } }), /sandboxConcurrentWorkers|sandbox-concurrent-workers/);
  });

  test('router pod labels given as a list (was: rendered as label "0")', () => {
    expectError(system({ router: { podLabels: ['a'] } }), /router\.podLabels: must be a map of strings such as \{ team: "ml" \}, got a list/);
  });

  test('imagePullPolicy outside the enum', () => {
    expectError(system({ imagePullPolicy: 'Sometimes' }), /imagePullPolicy: "Sometimes" is not allowed; use one of Always, IfNotPresent, Never/);
  });
});
