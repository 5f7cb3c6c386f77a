/**
 * The API reference exists for every jsii language (docs/api/API.<language>.md, written by the
 * docgen task after each compile) and covers every public type of the assembly, with the
 * language's own spelling of a prop.
 */
import * as fs from 'fs';
import * as path from 'path';

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
