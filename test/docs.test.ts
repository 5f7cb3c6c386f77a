/**
 * The API reference exists for every jsii language (docs/api/API.<language>.md, written by the
 * docgen task after each compile) and covers every public type of the assembly, with the
 * language's own spelling of a prop, and no doc comment's `{@link}` left unrendered
 * (hack/docgen-links.ts, run by the docgen task, renders them spelled the language's way).
 */
import * as fs from 'fs';
import * as path from 'path';
import { Language, languageOf, renderLinks } from '../hack/docgen-links';

const root = path.join(__dirname, '..');
const assembly = JSON.parse(fs.readFileSync(path.join(root, '.jsii'), 'utf8'));
const typeNames: string[] = Object.values(assembly.types as Record<string, { name: string }>).map((t) => t.name);

/** How each language spells the SandboxTemplate prop `envVarsInjectionPolicy`. */
const SPELLING: Record<string, string> = {
  python: 'env_vars_injection_policy',
  java: 'envVarsInjectionPolicy',
  csharp: 'EnvVarsInjectionPolicy',
  go: 'EnvVarsInjectionPolicy',
};

describe.each(Object.keys(SPELLING))('docs/api/API.%s.md', (language) => {
  const doc = fs.readFileSync(path.join(root, 'docs', 'api', `API.${language}.md`), 'utf8');

  test('documents every public type', () => {
    expect(typeNames.length).toBeGreaterThan(20);
    expect(typeNames.filter((name) => !doc.includes(`### ${name} `))).toEqual([]);
  });

  test(`spells props the ${language} way`, () => {
    expect(doc).toContain(SPELLING[language]);
  });
});

describe.each(['API.md', ...Object.keys(SPELLING).map((language) => `docs/api/API.${language}.md`)])('%s', (file) => {
  const doc = fs.readFileSync(path.join(root, file), 'utf8');

  test('has no {@link} left', () => {
    expect(doc.match(/\{@link[^}]*\}?/g) ?? []).toEqual([]);
  });

  test('links each rendered reference to a section the file has', () => {
    const ids = new Set([...doc.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]));
    const links = [...doc.matchAll(/\[`[^`\]]+`\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(20);
    expect(links.filter((id) => !ids.has(id))).toEqual([]);
  });
});

test('API.python.md spells members in links snake_case: ObjectRef.from_construct, not fromConstruct', () => {
  const doc = fs.readFileSync(path.join(root, 'docs', 'api', 'API.python.md'), 'utf8');
  expect(doc).toContain('ObjectRef.from_construct');
  expect(doc).toContain('[`SandboxRuntimeClass.from_name`](#cdk8s-agent-sandbox.SandboxRuntimeClass.fromName)');
  const camel = [...doc.matchAll(/\[`([^`\]]+)`\]\(#/g)].map((m) => m[1]).filter((text) => /\.[a-z]+[A-Z]/.test(text) || /^[a-z]+[A-Z]/.test(text));
  expect(camel).toEqual([]);
});

describe('hack/docgen-links.ts', () => {
  // A doc as jsii-docgen writes one: section anchors named in the language's spelling.
  const doc = (names: { method: string; prop: string }) => [
    '### ObjectRef <a name="ObjectRef" id="cdk8s-agent-sandbox.ObjectRef"></a>',
    `##### \`${names.method}\` <a name="${names.method}" id="cdk8s-agent-sandbox.ObjectRef.fromConstruct"></a>`,
    `##### \`${names.prop}\` <a name="${names.prop}" id="cdk8s-agent-sandbox.ObjectRef.property.routerPodLabels"></a>`,
    'See {@link ObjectRef.fromConstruct}, {@link ObjectRef}, {@link routerPodLabels}, {@link ObjectRef.fromConstruct | the construct form},',
    '{@link ObjectRef.fromConstruct the construct form} and {@link Missing.someMember}.',
    'Or pass `ObjectRef.fromConstruct(sa)`, `Missing.someMember` or `ObjectRef.fromConstruct`; fromConstruct outside a span stays.',
    '```',
    '{@link ObjectRef.fromConstruct} in a code block stays',
    '```',
  ].join('\n');
  const SPELLINGS: Record<Language, { method: string; prop: string; missing: string }> = {
    typescript: { method: 'fromConstruct', prop: 'routerPodLabels', missing: 'someMember' },
    python: { method: 'from_construct', prop: 'router_pod_labels', missing: 'some_member' },
    java: { method: 'fromConstruct', prop: 'routerPodLabels', missing: 'someMember' },
    csharp: { method: 'FromConstruct', prop: 'RouterPodLabels', missing: 'SomeMember' },
    go: { method: 'FromConstruct', prop: 'RouterPodLabels', missing: 'SomeMember' },
  };

  test.each(Object.keys(SPELLINGS) as Language[])('renders links the %s way', (language) => {
    const { method, prop, missing } = SPELLINGS[language];
    const out = renderLinks(doc({ method, prop }), language);
    const anchor = '(#cdk8s-agent-sandbox.ObjectRef.fromConstruct)';
    expect(out).toContain(`See [\`ObjectRef.${method}\`]${anchor}, [\`ObjectRef\`](#cdk8s-agent-sandbox.ObjectRef), `
      + `[\`${prop}\`](#cdk8s-agent-sandbox.ObjectRef.property.routerPodLabels), [the construct form]${anchor},`);
    expect(out).toContain(`[the construct form]${anchor} and \`Missing.${missing}\`.`);
    expect(out).toContain('{@link ObjectRef.fromConstruct} in a code block stays');
    // Code spans naming a public member are respelled; an unknown type's member and plain text are not.
    expect(out).toContain(`Or pass \`ObjectRef.${method}(sa)\`, \`Missing.someMember\` or \`ObjectRef.${method}\`; fromConstruct outside a span stays.`);
    expect(out.split('\n').filter((line) => line.includes('{@link'))).toHaveLength(1);
  });

  test('knows the language by the file name, and refuses other files', () => {
    expect(languageOf('API.md')).toBe('typescript');
    expect(languageOf('docs/api/API.python.md')).toBe('python');
    expect(() => languageOf('README.md')).toThrow(/not an API doc/);
  });
});
