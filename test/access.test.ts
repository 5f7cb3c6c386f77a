import { ApiObject, App, Chart, Testing } from 'cdk8s';
import { ObjectRef, SANDBOX_CONNECT_SUBRESOURCE, SandboxAccess } from '../src';

function synth(build: (chart: Chart) => void, namespace: string | undefined = 'agents'): any[] {
  const chart = new Chart(Testing.app(), 'c', namespace === undefined ? {} : { namespace });
  build(chart);
  return Testing.synth(chart);
}

describe('SandboxAccess', () => {
  test('by default: claims (create, get, list, watch, delete) and connect on claims, nothing else', () => {
    const [role, binding] = synth((c) => new SandboxAccess(c, 'agent', { metadata: { name: 'sandbox-agent' }, serviceAccounts: [ObjectRef.fromName('agent')] }));
    expect(role).toMatchObject({ kind: 'Role', metadata: { name: 'sandbox-agent', namespace: 'agents' } });
    expect(role.rules).toEqual([
      { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['create', 'delete', 'get', 'list', 'watch'] },
      { apiGroups: ['extensions.agents.x-k8s.io'], resources: [`sandboxclaims/${SANDBOX_CONNECT_SUBRESOURCE}`], verbs: ['create'] },
    ]);
    // Nothing that reads or changes Sandboxes themselves.
    expect(JSON.stringify(role.rules)).not.toContain('"sandboxes"');
    expect(binding).toMatchObject({
      kind: 'RoleBinding',
      metadata: { name: 'sandbox-agent', namespace: 'agents' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sandbox-agent' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: 'agents' }],
    });
  });

  test('bare sandboxes by name, suspend/resume, no claims, no router tokens; accounts as constructs', () => {
    const objects = synth((c) => {
      const sa = new ApiObject(c, 'sa', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'runner' } });
      new SandboxAccess(c, 'access', {
        serviceAccounts: [ObjectRef.fromConstruct(sa), ObjectRef.fromName('second')],
        claims: false,
        sandboxes: ['build-box'],
        lifecycle: true,
        routerTokens: false,
      });
    });
    const role = objects.find((o) => o.kind === 'Role');
    expect(role.rules).toEqual([
      { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes/connect'], resourceNames: ['build-box'], verbs: ['create'] },
      { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'patch', 'watch'] },
    ]);
    expect(objects.find((o) => o.kind === 'RoleBinding').subjects.map((s: any) => s.name)).toEqual(['runner', 'second']);
  });

  test('routerTokens: one Role per account, naming only its own token, so no account mints another\'s', () => {
    const objects = synth((c) => new SandboxAccess(c, 'a', { metadata: { name: 'agents' }, serviceAccounts: [ObjectRef.fromName('one'), ObjectRef.fromName('two')], routerTokens: true }));
    const tokenRoles = objects.filter((o) => o.kind === 'Role' && o.metadata.name.startsWith('agents-token-'));
    expect(tokenRoles.map((r) => r.rules)).toEqual([
      [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: ['one'], verbs: ['create'] }],
      [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: ['two'], verbs: ['create'] }],
    ]);
    const bindings = objects.filter((o) => o.kind === 'RoleBinding' && o.metadata.name.startsWith('agents-token-'));
    expect(bindings.map((b) => [b.roleRef.name, b.subjects.map((x: any) => x.name)])).toEqual([['agents-token-0', ['one']], ['agents-token-1', ['two']]]);
    // The shared Role names no token at all.
    expect(JSON.stringify(objects.find((o) => o.metadata.name === 'agents' && o.kind === 'Role').rules)).not.toContain('serviceaccounts/token');
  });

  test('mistakes name the field and the fix', () => {
    const app = new App();
    const chart = new Chart(app, 'bad');
    new SandboxAccess(chart, 'none', { serviceAccounts: [] });
    new SandboxAccess(chart, 'useless', { metadata: { namespace: 'x' }, serviceAccounts: [ObjectRef.fromName('Not_A_Name')], claims: false, sandboxes: ['Bad Name'] });
    const errors = chart.node.findAll().flatMap((c) => c.node.validate());
    expect(errors.join('\n')).toMatch(/serviceAccounts: must name at least one ServiceAccount/);
    expect(errors.join('\n')).toMatch(/metadata.namespace: is needed/);
    expect(errors.join('\n')).toMatch(/serviceAccounts\[0\]/);
    expect(errors.join('\n')).toMatch(/sandboxes\[0\]/);
    const off = new Chart(app, 'off', { namespace: 'n' });
    new SandboxAccess(off, 'nothing', { serviceAccounts: [ObjectRef.fromName('a')], claims: false });
    expect(off.node.findAll().flatMap((c) => c.node.validate()).join('\n')).toMatch(/claims: is false and no sandboxes or lifecycle are granted/);
  });
});
