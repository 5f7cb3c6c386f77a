/**
 * Prop and method names as the user's language spells them, for error messages.
 *
 * The library runs in Node.js; from Python, Java, C# or Go it runs under a jsii runtime, which
 * starts Node with `JSII_AGENT` naming the host language: `Python/3.12.1` (python-runtime),
 * `Java/21.0.2` (java-runtime), `DotNet/8.0.1/...` (dotnet-runtime), `go1.22.1/linux/amd64`
 * (go-runtime). Without it the caller is TypeScript or JavaScript. jsii-pacmak generates:
 *  - Python: snake_case props, keyword arguments and methods (`service_account`, `from_name`);
 *  - Java: camelCase builder methods and methods, as in TypeScript (`serviceAccount`, `fromName`);
 *  - C# and Go: PascalCase props and methods (`ServiceAccount`, `FromName`).
 *
 * Only names of the library's API go through here: manifest field paths
 * (`spec.podTemplate.spec.serviceAccountName`) are YAML and keep their spelling.
 */

/** A language jsii generates bindings for, or `typescript` for JavaScript callers. */
export type HostLanguage = 'typescript' | 'python' | 'java' | 'csharp' | 'go';

/** The caller's language, from the `JSII_AGENT` a jsii runtime sets (read at each call, so tests can set it). */
export function hostLanguage(agent: string | undefined = process.env.JSII_AGENT): HostLanguage {
  const value = (agent ?? '').trim().toLowerCase();
  if (value.startsWith('python/')) return 'python';
  if (value.startsWith('java/')) return 'java';
  if (value.startsWith('dotnet/')) return 'csharp';
  if (/^go\d/.test(value) || value.startsWith('go/')) return 'go';
  return 'typescript';
}

// Python keywords: jsii-pacmak appends "_" to an identifier that is one.
const PYTHON_KEYWORDS = new Set([
  'False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else',
  'except', 'finally', 'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise',
  'return', 'try', 'while', 'with', 'yield',
]);

// Abbreviations that jsii-pacmak's snake_case keeps as one word.
const ABBREVIATIONS = /(^|[^A-Z])(KiB|MiB|GiB)($|[^a-z])/g;

/** `serviceAccountName` → `service_account_name`, `podIPs` → `pod_i_ps`: what jsii-pacmak generates for Python. */
function snakeCase(name: string): string {
  const words = name
    .replace(ABBREVIATIONS, (_, before: string, abbr: string, after: string) => before + abbr[0] + abbr.slice(1).toLowerCase() + after)
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, '$1_$2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll}+)/gu, '$1_$2')
    .toLowerCase();
  return PYTHON_KEYWORDS.has(words) ? `${words}_` : words;
}

/** One identifier of the API (a prop or a method) as `language` spells it. */
export function identifierIn(name: string, language: HostLanguage): string {
  switch (language) {
    case 'python': return snakeCase(name);
    case 'csharp':
    case 'go': return name.charAt(0).toUpperCase() + name.slice(1);
    default: return name;
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * A path of props, such as `idlePolicy.suspendAfter`, `containers[0].envValues["API_KEY"]` or
 * `volumes[].name`, with each prop name spelled as the caller's language spells it. Indexes and
 * quoted keys (`["key"]`) are kept as written, and so is a segment that is no identifier (a map key
 * such as `nvidia.com/gpu` written after a dot), so user data is never respelled. Idempotent.
 */
export function propName(path: string, language: HostLanguage = hostLanguage()): string {
  if (language === 'typescript' || language === 'java') return path;
  let out = '';
  let i = 0;
  while (i < path.length) {
    const ch = path[i];
    if (ch === '[') {
      // Copy an index or a quoted key through its closing bracket (a quoted key may contain "]").
      let j = i + 1;
      if (path[j] === '"') {
        j++;
        while (j < path.length && path[j] !== '"') j += path[j] === '\\' ? 2 : 1;
        j++;
      }
      const close = path.indexOf(']', j);
      const end = close < 0 ? path.length : close + 1;
      out += path.slice(i, end);
      i = end;
    } else if (ch === '.') {
      out += ch;
      i++;
    } else {
      let j = i;
      while (j < path.length && path[j] !== '.' && path[j] !== '[') j++;
      const segment = path.slice(i, j);
      out += IDENTIFIER.test(segment) ? identifierIn(segment, language) : segment;
      i = j;
    }
  }
  return out;
}

/**
 * A static method of the API, such as `ObjectRef.fromName`, as the caller's language spells it:
 * `ObjectRef.from_name` (Python), `ObjectRef.FromName` (C#), `ObjectRef_FromName` (Go).
 */
export function staticMethodName(typeName: string, method: string, language: HostLanguage = hostLanguage()): string {
  return `${typeName}${language === 'go' ? '_' : '.'}${identifierIn(method, language)}`;
}
