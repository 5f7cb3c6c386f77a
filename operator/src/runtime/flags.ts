/**
 * What a command's flags look like to the code that reads them: typed getters by flag name
 * (`Flags`), and the error a command-line mistake raises (`UsageError`). The tables and parsers
 * live with their commands (commands/controller-flags.ts, router/flags.ts).
 */

/** A command-line mistake; main prints the message and exits 2, like Go's flag package. */
export class UsageError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A command's flags, typed, with defaults filled in. Getters throw on a name the command does not have. */
export interface Flags {
  number(flag: string): number;
  /** A duration flag in milliseconds. */
  duration(flag: string): number;
  boolean(flag: string): boolean;
  string(flag: string): string;
}
