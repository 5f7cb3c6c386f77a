import fc from 'fast-check';
import { RESERVED_PREFIXES, SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { foreignRef, pod, sandbox, service, vct } from './fixtures';
import { buildPod, buildPvc, buildService, desiredPodLabels, extensionLabels, podMetadataPatch, servicePorts, serviceDriftPatch } from '../../../src/controllers/sandbox/desired';
import { type Container } from '../../../src/model';

const HASH = SandboxLabels.SANDBOX_NAME_HASH;

describe('buildPod', () => {
  test('is named after the Sandbox, controlled by it, and carries its name hash', () => {
    const p = buildPod(sandbox({ name: 'my-sandbox' }));
    expect(p.metadata.name).toBe('my-sandbox');
    expect(p.metadata.namespace).toBe('team-a');
    expect(p.metadata.labels).toEqual({ [HASH]: '374de8f5' });
    expect(p.metadata.ownerReferences).toEqual([{
      apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', name: 'my-sandbox', uid: 'uid-sandbox-1', controller: true, blockOwnerDeletion: true,
    }]);
    expect(p.metadata.annotations).toEqual({});
  });

  test('drops reserved user labels and annotations, writes the hash last, records what it propagated', () => {
    const p = buildPod(sandbox({
      spec: {
        podTemplate: {
          metadata: {
            labels: { 'app': 'web', [HASH]: 'deadbeef', 'extensions.agents.x-k8s.io/x': '1', 'api.agents.x-k8s.io/kept': 'yes' },
            annotations: { 'note': 'n', 'opentelemetry.io/trace-context': '{}', 'agents.x-k8s.io/pod-name': 'x' },
          },
          spec: { containers: [{ name: 'main' }] },
        },
      },
    }));
    expect(p.metadata.labels).toEqual({ 'app': 'web', 'api.agents.x-k8s.io/kept': 'yes', [HASH]: NameHash.of('my-sandbox') });
    expect(p.metadata.annotations).toEqual({
      note: 'n',
      [SandboxAnnotations.PROPAGATED_LABELS]: 'api.agents.x-k8s.io/kept,app',
      [SandboxAnnotations.PROPAGATED_ANNOTATIONS]: 'note',
    });
  });

  test('claim templates become volumes that replace same-named template volumes', () => {
    const p = buildPod(sandbox({
      spec: {
        podTemplate: { spec: { containers: [{ name: 'main' }], volumes: [{ name: 'data', emptyDir: {} }, { name: 'tmp', emptyDir: {} }] } },
        volumeClaimTemplates: [vct('data'), vct('cache')],
      },
    }));
    expect(p.spec!.volumes).toEqual([
      { name: 'tmp', emptyDir: {} },
      { name: 'data', persistentVolumeClaim: { claimName: 'data-my-sandbox' } },
      { name: 'cache', persistentVolumeClaim: { claimName: 'cache-my-sandbox' } },
    ]);
  });

  test('a bare Sandbox gets no service-account token unless it sets the field', () => {
    expect(buildPod(sandbox()).spec!.automountServiceAccountToken).toBe(false);
    for (const value of [true, false]) {
      const p = buildPod(sandbox({ spec: { podTemplate: { spec: { containers: [{ name: 'main' }], automountServiceAccountToken: value } } } }));
      expect(p.spec!.automountServiceAccountToken).toBe(value);
    }
  });

  test('does not share structure with the Sandbox spec', () => {
    const sb = sandbox();
    const p = buildPod(sb);
    (p.spec!.containers[0] as Container).name = 'changed';
    expect(sb.spec.podTemplate.spec.containers[0].name).toBe('main');
  });
});

describe('extension labels and created-by', () => {
  const poolRef = { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', name: 'pool', uid: 'p', controller: true };
  const claimRef = { ...poolRef, kind: 'SandboxClaim', name: 'claim' };
  const labels = { [SandboxLabels.WARM_POOL_SANDBOX]: 'aaaa', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 'bbbb', [SandboxLabels.CLAIM_UID]: 'c' };
  test.each([
    ['pool controller: pool and template labels', [poolRef], { [SandboxLabels.WARM_POOL_SANDBOX]: 'aaaa', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 'bbbb' }],
    ['claim controller: template label only', [claimRef], { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 'bbbb' }],
    ['v1alpha1 owner refs match by group', [{ ...claimRef, apiVersion: 'extensions.agents.x-k8s.io/v1alpha1' }], { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 'bbbb' }],
    ['foreign controller: none', [foreignRef()], {}],
    ['non-controller extension ref: none', [{ ...poolRef, controller: false }], {}],
    ['no owner: none', undefined, {}],
  ])('%s', (_name, ownerReferences, expected) => {
    expect(extensionLabels(sandbox({ labels, ownerReferences }))).toEqual(expected);
  });

  test.each([
    ['go-client', 'go-client'], ['python-client', 'python-client'], ['controller', 'controller'], ['evil value', 'unknown'],
  ])('created-by %s reaches the Pod as %s', (value, expected) => {
    expect(desiredPodLabels(sandbox({ labels: { [SandboxLabels.CREATED_BY]: value } }))[SandboxLabels.CREATED_BY]).toBe(expected);
  });
});

describe('podMetadataPatch', () => {
  const withTemplate = (labels: Record<string, string>, annotations: Record<string, string> = {}) =>
    sandbox({ spec: { podTemplate: { metadata: { labels, annotations }, spec: { containers: [{ name: 'main' }] } } } });

  test('nothing to do for a Pod built from the same Sandbox', () => {
    const sb = withTemplate({ app: 'web' }, { note: 'n' });
    const built = buildPod(sb);
    expect(podMetadataPatch(sb, pod({ labels: built.metadata.labels, annotations: built.metadata.annotations }))).toBeUndefined();
  });

  test('restores the hash label and changed values, deletes labels no longer in the template', () => {
    const sb = withTemplate({ app: 'web' });
    const patch = podMetadataPatch(sb, pod({
      labels: { app: 'old', gone: 'x', mine: 'third-party', [HASH]: 'spoofed' },
      annotations: { [SandboxAnnotations.PROPAGATED_LABELS]: 'app,gone', [SandboxAnnotations.PROPAGATED_ANNOTATIONS]: 'old-note', 'old-note': 'x' },
    }));
    expect(patch).toEqual({
      labels: { app: 'web', [HASH]: NameHash.of('my-sandbox'), gone: null },
      annotations: { [SandboxAnnotations.PROPAGATED_LABELS]: 'app', [SandboxAnnotations.PROPAGATED_ANNOTATIONS]: null, 'old-note': null },
    });
  });

  test('scrubs reserved keys an older controller recorded as propagated, but never the hash', () => {
    const patch = podMetadataPatch(withTemplate({}), pod({
      labels: { [HASH]: NameHash.of('my-sandbox'), [SandboxLabels.CLAIM_UID]: 'c' },
      annotations: { [SandboxAnnotations.PROPAGATED_LABELS]: `${HASH},${SandboxLabels.CLAIM_UID}` },
    }));
    expect(patch).toEqual({ labels: { [SandboxLabels.CLAIM_UID]: null }, annotations: { [SandboxAnnotations.PROPAGATED_LABELS]: null } });
  });

  test('removes extension labels and created-by once their condition stops holding', () => {
    const patch = podMetadataPatch(sandbox(), pod({
      labels: { [HASH]: NameHash.of('my-sandbox'), [SandboxLabels.WARM_POOL_SANDBOX]: 'p', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 't', [SandboxLabels.CREATED_BY]: 'go-client' },
    }));
    expect(patch).toEqual({
      labels: { [SandboxLabels.WARM_POOL_SANDBOX]: null, [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: null, [SandboxLabels.CREATED_BY]: null },
    });
  });
});

describe('servicePorts', () => {
  const ports = (containers: Container[], initContainers: Container[] = []) =>
    servicePorts(sandbox({ spec: { podTemplate: { spec: { containers, initContainers } } } }));

  test.each<[string, Container[], Container[], object[]]>([
    ['no ports, no Service ports', [{ name: 'a' }], [], []],
    ['explicit names kept, generated otherwise, sorted by port then protocol', [
      { name: 'a', ports: [{ containerPort: 8080, name: 'http' }, { containerPort: 53, protocol: 'UDP' }, { containerPort: 53 }] },
    ], [], [
      { name: 'p-53-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
      { name: 'p-53-udp', port: 53, protocol: 'UDP', targetPort: 53 },
      { name: 'http', port: 8080, protocol: 'TCP', targetPort: 8080 },
    ]],
    ['deduplicated on (port, protocol), empty protocol is TCP', [
      { name: 'a', ports: [{ containerPort: 80, protocol: 'TCP' }] }, { name: 'b', ports: [{ containerPort: 80, name: 'web' }] },
    ], [], [{ name: 'web', port: 80, protocol: 'TCP', targetPort: 80 }]],
    ['a taken explicit name falls back to the next, then to a generated one', [
      { name: 'a', ports: [{ containerPort: 80, name: 'web' }, { containerPort: 81, name: 'web' }] },
    ], [], [{ name: 'web', port: 80, protocol: 'TCP', targetPort: 80 }, { name: 'p-81-tcp', port: 81, protocol: 'TCP', targetPort: 81 }]],
    ['generated names get -2 on collision', [
      { name: 'a', ports: [{ containerPort: 80, name: 'p-90-tcp' }, { containerPort: 90 }] },
    ], [], [{ name: 'p-90-tcp', port: 80, protocol: 'TCP', targetPort: 80 }, { name: 'p-90-tcp-2', port: 90, protocol: 'TCP', targetPort: 90 }]],
    ['port 0 skipped', [{ name: 'a', ports: [{ containerPort: 0 }] }], [], []],
    ['sidecars count, plain init containers do not', [{ name: 'a' }], [
      { name: 'side', restartPolicy: 'Always', ports: [{ containerPort: 9090, protocol: 'SCTP' }] }, { name: 'init', ports: [{ containerPort: 7000 }] },
    ], [{ name: 'p-9090-sctp', port: 9090, protocol: 'SCTP', targetPort: 9090 }]],
  ])('%s', (_name, containers, inits, expected) => {
    expect(ports(containers, inits)).toEqual(expected);
  });

  test('names are unique and ports sorted, whatever the containers say (fast-check)', () => {
    const port = fc.record({
      containerPort: fc.integer({ min: 0, max: 70 }),
      protocol: fc.constantFrom(undefined, 'TCP', 'UDP', 'SCTP'),
      name: fc.constantFrom(undefined, 'a', 'b', 'p-1-tcp', 'p-2-udp'),
    }, { requiredKeys: ['containerPort'] });
    fc.assert(fc.property(fc.array(fc.array(port, { maxLength: 6 }), { maxLength: 4 }), (portLists) => {
      const result = ports(portLists.map((ps, i) => ({ name: `c${i}`, ports: ps })));
      expect(new Set(result.map((p) => p.name)).size).toBe(result.length);
      const keys = result.map((p) => `${p.port}/${p.protocol}`);
      expect(new Set(keys).size).toBe(keys.length);
      for (let i = 1; i < result.length; i++) {
        const [a, b] = [result[i - 1], result[i]];
        expect(a.port < b.port || (a.port === b.port && a.protocol < b.protocol)).toBe(true);
      }
    }));
  });
});

describe('Service', () => {
  test('headless, labeled and selecting by hash only', () => {
    const svc = buildService(sandbox());
    expect(svc.metadata.labels).toEqual({ [HASH]: '374de8f5' });
    expect(svc.spec).toEqual({ clusterIP: 'None', selector: { [HASH]: '374de8f5' }, ports: [] });
  });

  test('drift patch replaces the selector, restores the label, and the ports only when asked', () => {
    const sb = sandbox({ spec: { podTemplate: { spec: { containers: [{ name: 'a', ports: [{ containerPort: 80 }] }] } } } });
    const drifted = service(sb, { labels: {} }, { selector: { [HASH]: 'other', extra: 'x' }, ports: [] });
    expect(serviceDriftPatch(sb, drifted, false)).toEqual({
      metadata: { labels: { [HASH]: '374de8f5' } },
      spec: { selector: { [HASH]: '374de8f5', extra: null } },
    });
    expect((serviceDriftPatch(sb, drifted, true) as { spec: { ports: unknown } }).spec.ports).toEqual([{ name: 'p-80-tcp', port: 80, protocol: 'TCP', targetPort: 80 }]);
    expect(serviceDriftPatch(sb, buildService(sb), true)).toBeUndefined();
  });
});

describe('buildPvc', () => {
  test('named <template>-<sandbox>, controlled by the Sandbox, hash label not overridable', () => {
    const p = buildPvc(sandbox(), vct('data', { tier: 'fast', [HASH]: 'spoof' }));
    expect(p.metadata.name).toBe('data-my-sandbox');
    expect(p.metadata.labels).toEqual({ tier: 'fast', [HASH]: '374de8f5' });
    expect(p.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Sandbox', uid: 'uid-sandbox-1', controller: true, blockOwnerDeletion: true });
    expect(p.spec).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
  });
});

describe('reserved-prefix properties (fast-check)', () => {
  const key = fc.oneof(
    fc.tuple(fc.constantFrom(...RESERVED_PREFIXES), fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/)).map(([prefix, s]) => prefix + s),
    fc.stringMatching(/^([a-z]{1,8}\.)?[a-z]{1,8}\/[a-z][a-z0-9-]{0,8}$/),
    fc.constant(SandboxLabels.SANDBOX_NAME_HASH),
  );
  const map = fc.dictionary(key, fc.stringMatching(/^[a-z0-9]{0,8}$/), { maxKeys: 8 });
  const name = fc.stringMatching(/^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$/);

  test('no user key under a reserved prefix reaches the Pod, and the hash is always NameHash(name)', () => {
    fc.assert(fc.property(name, map, map, (sandboxName, labels, annotations) => {
      const sb = sandbox({ name: sandboxName, spec: { podTemplate: { metadata: { labels, annotations }, spec: { containers: [{ name: 'm' }] } } } });
      const p = buildPod(sb);
      expect(p.metadata.labels![HASH]).toBe(NameHash.of(sandboxName));
      for (const k of Object.keys(p.metadata.labels!)) {
        if (k !== HASH) expect(RESERVED_PREFIXES.some((prefix) => k.startsWith(prefix))).toBe(false);
      }
      const bookkeeping: string[] = [SandboxAnnotations.PROPAGATED_LABELS, SandboxAnnotations.PROPAGATED_ANNOTATIONS];
      for (const k of Object.keys(p.metadata.annotations!)) {
        if (!bookkeeping.includes(k)) expect(RESERVED_PREFIXES.some((prefix) => k.startsWith(prefix)) || k === 'opentelemetry.io/trace-context').toBe(false);
      }
    }));
  });

  test('after the metadata patch, an existing Pod carries exactly the desired hash whatever it had', () => {
    fc.assert(fc.property(name, map, map, (sandboxName, labels, podLabels) => {
      const sb = sandbox({ name: sandboxName, spec: { podTemplate: { metadata: { labels }, spec: { containers: [{ name: 'm' }] } } } });
      const existing = pod({ name: sandboxName, owner: sb, labels: podLabels });
      const patch = podMetadataPatch(sb, existing);
      const merged: Record<string, string | null> = { ...existing.metadata.labels, ...patch?.labels };
      expect(merged[HASH]).toBe(NameHash.of(sandboxName));
      for (const [k, v] of Object.entries(labels)) {
        if (!RESERVED_PREFIXES.some((prefix) => k.startsWith(prefix))) expect(merged[k]).toBe(v);
      }
    }));
  });
});
