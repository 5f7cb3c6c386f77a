/**
 * `@cdk8s-agent-sandbox/sdk/e2b`: E2B's JavaScript SDK shape (`import { Sandbox } from 'e2b'`) on
 * Kubernetes agent sandboxes, so code written for E2B moves over by changing the import:
 * `Sandbox.create(template)` claims from the SandboxWarmPool of that name, `commands`, `files` and
 * `pty` go to the sandbox's runtime, `kill()` deletes the claim. What cannot be mapped honestly
 * throws a NotSupportedError naming what to use instead. See README.md, "Coming from E2B".
 */
/// <reference types="node" preserve="true" />
/// <reference lib="esnext.disposable" preserve="true" />
import { NotSupportedError } from './errors.js';

export { Sandbox, DEFAULT_TEMPLATE, DEFAULT_SANDBOX_TIMEOUT_MS } from './sandbox.js';
export type { SandboxOpts, SandboxConnectOpts, SandboxClientLike } from './sandbox.js';
export { Commands, CommandHandle, DEFAULT_COMMAND_TIMEOUT_MS } from './commands.js';
export type { CommandStartOpts, CommandConnectOpts, CommandRequestOpts, ProcessInfo } from './commands.js';
export { Filesystem, FileType } from './filesystem.js';
export type { EntryInfo, WriteInfo, WriteEntry, WriteData, FilesystemRequestOpts, FilesystemListOpts, ReadFormat } from './filesystem.js';
export { Pty } from './pty.js';
export type { PtyCreateOpts, PtySize } from './pty.js';
export {
  SandboxError, CommandExitError, TimeoutError, NotFoundError, InvalidArgumentError, AuthenticationError, RateLimitError, NotSupportedError,
} from './errors.js';
export type { CommandResult } from './errors.js';
export { DEFAULT_WORKSPACE_PATH } from './workspace.js';
export { SandboxClient } from '../client.js';
export type { SandboxClientOptions } from '../client.js';

const TEMPLATES = 'a template is a SandboxTemplate and a SandboxWarmPool (the cdk8s-agent-sandbox constructs, or YAML): build the image with your usual tools, and pass the pool\'s name to Sandbox.create';

/** E2B's template builder: templates are Kubernetes resources here. */
export function Template(..._args: unknown[]): never {
  throw new NotSupportedError('Template', TEMPLATES);
}
Template.build = async (..._args: unknown[]): Promise<never> => {
  throw new NotSupportedError('Template.build', TEMPLATES);
};
