// Compiles the SDK's sources (ES modules: sdk/package.json says "type": "module") to CommonJS for
// the integration tests, which jest runs as CommonJS: data-plane/process-proto.ts require()s the
// process.v1 codec from sdk/src. ts-jest would keep their ESM syntax (its node16 setting follows
// the package's type) and it shares one configuration across transforms, so this is its own
// transformer: TypeScript's transpileModule, nothing type-checked (test/tsconfig.json does that).
const crypto = require('crypto');
const ts = require('typescript');

const COMPILER_OPTIONS = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, inlineSourceMap: true, inlineSources: true };

module.exports = {
  process(source, fileName) {
    return { code: ts.transpileModule(source, { fileName, compilerOptions: COMPILER_OPTIONS }).outputText };
  },
  getCacheKey(source, fileName) {
    return crypto.createHash('sha256').update(`${ts.version}\0${__filename}\0${fileName}\0${source}`).digest('hex');
  },
};
