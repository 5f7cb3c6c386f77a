import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { foreignRef, pod, sandbox } from './fixtures';
import { childOwnerKeys } from '../../../src/controllers/sandbox/controller';
import { type Sandbox } from '../../../src/model';

describe('childOwnerKeys: which Sandbox a child event wakes', () => {
  const byHash = new Map<string, Sandbox[]>([[`team-a/${NameHash.of('my-sandbox')}`, [sandbox()]]]);
  const lookup = (nsHash: string) => byHash.get(nsHash) ?? [];

  test.each([
    ['controlled by a Sandbox: that Sandbox', pod(), ['team-a/my-sandbox']],
    ['controlled by a v1alpha1 Sandbox ref: matched by group and kind', pod({ owner: { ...foreignRef('Sandbox', 'old'), apiVersion: 'agents.x-k8s.io/v1alpha1' } }), ['team-a/old']],
    ['unowned with a hash label: the Sandbox with that hash (it may adopt it)', pod({ owner: null }), ['team-a/my-sandbox']],
    ['foreign controller with our hash label: the Sandbox it blocks', pod({ owner: foreignRef() }), ['team-a/my-sandbox']],
    ['a hash no Sandbox has: nothing', pod({ owner: null, labels: { [SandboxLabels.SANDBOX_NAME_HASH]: '00000000' } }), []],
    ['no label, no Sandbox owner: nothing', pod({ owner: null, labels: {} }), []],
  ])('%s', (_name, obj, keys) => {
    expect(childOwnerKeys(obj, lookup)).toEqual(keys);
  });
});
