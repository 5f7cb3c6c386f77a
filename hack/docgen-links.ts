/**
 * jsii-docgen copies doc comments as they are, so `{@link SandboxRuntimeClass.fromConstruct}` reaches
 * every API.<language>.md unrendered and spelled the TypeScript way. This renders each
 * `{@link Target}`, `{@link Target | text}` and `{@link Target text}` in the files given as a link to
 * the target's section, with the target spelled as that file spells it: the name docgen gives the
 * section's anchor (`<a name="from_construct" id="cdk8s-agent-sandbox.ObjectRef.fromConstruct">`),
 * so Python reads `ObjectRef.from_construct`, Java `ObjectRef.fromConstruct`, C# and Go
 * `ObjectRef.FromConstruct`. A bare member (`{@link namespace}`) is one of the type the text
 * documents. A target with no section (not public) is still rendered, as a code span spelled by the
 * language's rule. Code spans that name a public type's member (`ObjectRef.fromName`) are respelled
 * the same way. The docgen task runs it (.projenrc.ts): `docgen-links.ts API.md docs/api/API.*.md`.
 */
import * as fs from 'fs';
import * as path from 'path';

export type Language = 'typescript' | 'python' | 'java' | 'csharp' | 'go';

const LINK = /\{@link\s+([^\s}|\\]+)\s*(?:\\?\|\s*)?([^}]*)\}/g;
const ANCHOR = /<a name="([^"]*)" id="([^"]+)"/g;
const CODE_SPAN = /`[^`\n]+`/g;
const TYPE_MEMBER = /\b([A-Z][A-Za-z0-9]*)\.([a-z][A-Za-z0-9]*)\b/g;

/** The language of an API doc by its file name: API.md is TypeScript, API.<language>.md the others. */
export function languageOf(file: string): Language {
  const match = /^API(?:\.(python|java|csharp|go))?\.md$/.exec(path.basename(file));
  if (!match) throw new Error(`${file}: not an API doc (expected API.md or API.<python|java|csharp|go>.md)`);
  return (match[1] ?? 'typescript') as Language;
}

/** `fromConstruct` as the language spells a member it has no section for. */
export function spellMember(name: string, language: Language): string {
  if (/^[A-Z0-9_]+$/.test(name)) return name; // a constant keeps its spelling in Python and Java
  switch (language) {
    case 'python': return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
    case 'csharp':
    case 'go': return name.charAt(0).toUpperCase() + name.slice(1);
    default: return name;
  }
}

/** Renders every `{@link}` of one API doc (outside fenced code blocks). */
export function renderLinks(markdown: string, language: Language): string {
  // id (`cdk8s-agent-sandbox.ObjectRef.fromConstruct`) → the name docgen shows for it.
  const names = new Map<string, string>();
  for (const [, name, id] of markdown.matchAll(ANCHOR)) names.set(id, name);
  // The package's anchors start with its name (`cdk8s-agent-sandbox.`): the most common first part.
  const counts = new Map<string, number>();
  for (const id of names.keys()) if (id.includes('.')) counts.set(id.split('.')[0], (counts.get(id.split('.')[0]) ?? 0) + 1);
  const prefix = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';

  /** The section for `Type`, `Type.member` or a bare member of `context`, if the doc has one. */
  function resolve(target: string, context: string | undefined): { id: string; text: string } | undefined {
    const [first, ...rest] = target.split('.');
    const candidates: Array<[string, string, string | undefined]> = rest.length > 0
      ? [[first, rest.join('.'), undefined]]
      : [[first, '', undefined], ...(context ? [[context, first, context] as [string, string, string]] : [])];
    for (const [type, member, bare] of candidates) {
      if (!member) {
        const id = `${prefix}.${type}`;
        if (names.has(id)) return { id, text: names.get(id)! };
        continue;
      }
      for (const id of [`${prefix}.${type}.${member}`, `${prefix}.${type}.property.${member}`]) {
        if (names.has(id)) return { id, text: bare ? names.get(id)! : `${names.get(`${prefix}.${type}`) ?? type}.${names.get(id)}` };
      }
    }
    return undefined;
  }

  let fenced = false;
  let context: string | undefined;
  return markdown.split('\n').map((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return line;
    const rendered = line.replace(LINK, (_link, target: string, text: string) => {
      const found = resolve(target, context);
      const label = text.trim() !== '' ? text.trim() : `\`${found?.text ?? target.split('.').map((part, i) => (i === 0 ? part : spellMember(part, language))).join('.')}\``;
      return found ? `[${label}](#${found.id})` : label;
    });
    // Code spans that name a member of a public type (`ObjectRef.fromName`, also inside a call such as
    // `EnvValue.fromSecretKey(ObjectRef.fromName("creds"), "token")`), spelled the way this file spells it.
    const spelled = language === 'typescript' ? rendered : rendered.replace(CODE_SPAN, (span: string) =>
      span.replace(TYPE_MEMBER, (whole: string, type: string, member: string) => resolve(`${type}.${member}`, undefined)?.text ?? whole));
    // The type the following text documents: the last section anchor before it.
    for (const [, , id] of line.matchAll(ANCHOR)) {
      const type = id.slice(prefix.length + 1).split('.')[0];
      if (id.startsWith(`${prefix}.`) && type) context = type;
    }
    return spelled;
  }).join('\n');
}

if (require.main === module) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: docgen-links.ts <API.md | API.<language>.md>...');
    process.exit(2);
  }
  for (const file of files) {
    const before = fs.readFileSync(file, 'utf8');
    const after = renderLinks(before, languageOf(file));
    const left = after.match(/\{@link[^}]*\}?/g);
    if (left) throw new Error(`${file}: ${left.length} {@link} left unrendered (the first: ${left[0]}); fix hack/docgen-links.ts`);
    if (after !== before) fs.writeFileSync(file, after);
    console.log(`${file}: ${(before.match(LINK) ?? []).length} {@link} rendered`);
  }
}
