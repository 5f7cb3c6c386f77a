/** Command-line flags of the benchmark scripts: `--name value` or `--name=value`. */

/** The value of `--name`, or undefined when it is not given. */
export function flagValue(argv: readonly string[], name: string): string | undefined {
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return undefined;
  return argv[i].includes('=') ? argv[i].slice(argv[i].indexOf('=') + 1) : argv[i + 1];
}
