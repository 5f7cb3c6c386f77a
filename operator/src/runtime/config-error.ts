/** The cluster connection cannot be configured; main prints the message without a stack trace. */
export class ConfigError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
