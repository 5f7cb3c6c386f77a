/**
 * This library's version: the `version` of the package.json beside `src/` and `lib/`. projen's release
 * writes the version being released there before it builds (a checkout says 0.0.0), and every jsii
 * language runs this JavaScript from the npm tarball, package.json included, so Python, Java, Go and
 * .NET read the same value at load time. `require` (not `import`) keeps package.json outside the
 * compiled tree, and bundlers inline it.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const packageJson: { readonly version: string } = require('../package.json');

/** The version of this library's release, e.g. "0.1.0". */
export const LIBRARY_VERSION: string = packageJson.version;
