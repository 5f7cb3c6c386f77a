import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SandboxLabels } from '#api/labels';
import { PodSpecSharing, slimPod, type Pod, type Sandbox } from '../../src/model';

const TEMPLATE_HASH = 'a1b2c3d4';

function member(name: string, opts: { namespace?: string; template?: string | null; image?: string } = {}): Sandbox {
  // Parsed from JSON as an informer gets it: every member a separate copy.
  return JSON.parse(JSON.stringify({
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: {
      name,
      namespace: opts.namespace ?? 'team-a',
      labels: opts.template === null ? {} : { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: opts.template ?? TEMPLATE_HASH },
    },
    spec: {
      podTemplate: {
        metadata: { labels: { app: name } },
        spec: {
          automountServiceAccountToken: false,
          containers: [{ name: 'main', image: opts.image ?? 'python:3.12-slim', env: [{ name: 'A', value: '1' }], securityContext: { capabilities: { drop: ['ALL'] } } }],
        },
      },
    },
    status: { conditions: [] },
  }));
}

describe('PodSpecSharing: pool members built from one template share one frozen pod spec', () => {
  test('equal specs under one template become one object; the rest of each Sandbox stays its own', () => {
    const sharing = new PodSpecSharing();
    const a = sharing.transform(member('a'));
    const b = sharing.transform(member('b'));
    expect(b.spec.podTemplate.spec).toBe(a.spec.podTemplate.spec);
    expect(b.spec.podTemplate.metadata).toEqual({ labels: { app: 'b' } });
    expect(b.metadata.name).toBe('b');
    expect(b.spec.podTemplate.spec).toEqual(member('x').spec.podTemplate.spec);
    expect(sharing.held).toBe(1);
  });

  test('the shared spec is frozen all the way down: a write to it throws instead of changing every member', () => {
    const sharing = new PodSpecSharing();
    const spec = sharing.transform(member('a')).spec.podTemplate.spec;
    expect(() => {
      (spec.containers[0] as any).image = 'evil';
    }).toThrow(TypeError);
    expect(() => spec.containers.push({ name: 'x', image: 'y' })).toThrow(TypeError);
    expect(() => {
      (spec.containers[0].securityContext as any).capabilities.drop[0] = 'NONE';
    }).toThrow(TypeError);
    // structuredClone (how the Pod is built from it) gives a writable copy.
    const copy = structuredClone(spec);
    copy.containers[0].image = 'fine';
    expect(copy.containers[0].image).toBe('fine');
  });

  test('a different spec, namespace or template is not shared; a Sandbox with no template label is returned as is', () => {
    const sharing = new PodSpecSharing();
    const base = sharing.transform(member('a')).spec.podTemplate.spec;
    expect(sharing.transform(member('edited', { image: 'python:3.13-slim' })).spec.podTemplate.spec).not.toBe(base);
    expect(sharing.transform(member('other-ns', { namespace: 'team-b' })).spec.podTemplate.spec).not.toBe(base);
    expect(sharing.transform(member('other-template', { template: 'ffffffff' })).spec.podTemplate.spec).not.toBe(base);
    const bare = member('bare', { template: null });
    expect(sharing.transform(bare)).toBe(bare);
    expect(Object.isFrozen(bare.spec.podTemplate.spec)).toBe(false);
  });

  test('4 variants per template are offered, most recently matched first; with all 4 in use, a spec seen twice (a template edit) replaces the coldest', () => {
    const sharing = new PodSpecSharing();
    const specOf = (sb: Sandbox) => sb.spec.podTemplate.spec;
    const [v1, v2, v3, v4] = ['v1', 'v2', 'v3', 'v4'].map((tag) => sharing.transform(member(tag, { image: `img:${tag}` })));
    // v1 is matched again, so v2 is now the coldest.
    expect(specOf(sharing.transform(member('v1-again', { image: 'img:v1' })))).toBe(specOf(v1));
    // The first v5 waits on probation: its own, not frozen.
    const v5 = sharing.transform(member('v5', { image: 'img:v5' }));
    expect(Object.isFrozen(specOf(v5))).toBe(false);
    // The second is shared with it: a key full of older variants does not shut the new template out.
    expect(specOf(sharing.transform(member('v5-again', { image: 'img:v5' })))).toBe(specOf(v5));
    expect(Object.isFrozen(specOf(v5))).toBe(true);
    for (const old of [v1, v3, v4]) expect(specOf(sharing.transform(member(`${old.metadata.name}-2`, { image: old.spec.podTemplate.spec.containers[0].image })))).toBe(specOf(old));
    // v2's holders keep their (frozen) copy; it is no longer offered.
    expect(specOf(sharing.transform(member('v2-again', { image: 'img:v2' })))).not.toBe(specOf(v2));
    expect(Object.isFrozen(specOf(v2))).toBe(true);
  });

  test('one-off specs (cold-claimed Sandboxes with their own env) never push out the shared variants', () => {
    const sharing = new PodSpecSharing();
    const specOf = (sb: Sandbox) => sb.spec.podTemplate.spec;
    const hot = ['v1', 'v2', 'v3', 'v4'].map((tag) => sharing.transform(member(tag, { image: `img:${tag}` })));
    for (let i = 0; i < 20; i++) {
      const oneOff = sharing.transform(member(`cold-${i}`, { image: `img:cold-${i}` }));
      expect(Object.isFrozen(specOf(oneOff))).toBe(false);
      const again = sharing.transform(member(`m-${i}`, { image: `img:v${(i % 4) + 1}` }));
      expect(specOf(again)).toBe(specOf(hot[i % 4]));
    }
  });

  test('held weakly: once no Sandbox uses a spec it is collected, and a new one takes its place', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const sharing = new PodSpecSharing();
    let kept: Sandbox[] | undefined = [sharing.transform(member('a')), sharing.transform(member('b'))];
    expect(sharing.held).toBe(1);
    kept = undefined;
    expect(kept).toBeUndefined();
    // A WeakRef's target stays alive until the job that last dereferenced it has ended.
    for (let i = 0; i < 5 && sharing.held > 0; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
    expect(sharing.held).toBe(0);
    const fresh = sharing.transform(member('c', { image: 'img:new' }));
    expect(sharing.transform(member('d', { image: 'img:new' })).spec.podTemplate.spec).toBe(fresh.spec.podTemplate.spec);
  });
});

test('the cached Pod keeps metadata, nodeName, phase, conditions and pod IPs; the rest of spec and status is dropped', () => {
  const full: Pod = JSON.parse(JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'team-a', labels: { a: 'b' }, ownerReferences: [] },
    spec: { nodeName: 'kwok-node-0', containers: [{ name: 'main', image: 'x' }], tolerations: [] },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True' }],
      podIP: '10.0.0.1',
      podIPs: [{ ip: '10.0.0.1' }],
      hostIP: '192.0.2.1',
      startTime: '2026-01-01T00:00:00Z',
      qosClass: 'BestEffort',
      containerStatuses: [{ name: 'main', ready: true, restartCount: 0, image: 'x', imageID: 'x@sha256:00', state: { running: {} } }],
    },
  }));
  const slim = slimPod(full);
  expect(slim.metadata).toBe(full.metadata);
  expect(slim.spec).toEqual({ nodeName: 'kwok-node-0' });
  expect(slim.status).toEqual({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }] });
  expect(slimPod({ ...full, spec: { nodeName: '' } as Pod['spec'], status: undefined })).toEqual({ ...full, spec: {}, status: undefined });
});
