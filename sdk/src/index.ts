/**
 * The TypeScript SDK for agent sandboxes (kubernetes-sigs/agent-sandbox, `agents.x-k8s.io`):
 * claim a sandbox from a warm pool, run commands and move files in it through the sandbox router,
 * and let it go. See README.md.
 */
// The declarations use Node's types (Buffer, streams) and AsyncDisposable: these keep them in the
// .d.ts, so a consumer gets them whatever its `types` and `lib` (TypeScript 6 includes no @types by
// default). kube.ts has them too, for entry points that do not come through here.
/// <reference types="node" preserve="true" />
/// <reference lib="esnext.disposable" preserve="true" />
export { SandboxClient } from './client.js';
export type { SandboxClientOptions, ClaimOptions, ConnectOptions, DeleteClaimOptions, IdlePolicyOptions } from './client.js';
export type { KubeConfigLike } from './kube.js';
export { Sandbox } from './sandbox.js';
export type { SandboxHandle, RunOptions, RunOrBackgroundOptions, RunResult, WaitOptions } from './sandbox.js';
export type { BackgroundRunOptions, CommandHandle, SandboxProcesses, ProcessInfo, AttachOptions, ProcessSignal } from './processes.js';
export type { SandboxFiles, FileEntry, FileContent, FileCallOptions, RemoveOptions } from './files.js';
export type { SandboxPty, PtyHandle, PtyCreateOptions, PtySignal } from './pty.js';
export type { Connection, PortForwardConnection, DirectConnection, InClusterRouterConnection, PodConnection } from './connection.js';
export type { Duration } from './duration.js';
export type { RetryOptions } from './retry.js';
export type { RouterTokenOptions } from './router-token.js';
export { ROUTER_AUDIENCE } from './router-token.js';
export type { TracerLike, SpanLike, PropagatorLike } from './tracing.js';
export {
  SandboxError, SandboxConfigError, SandboxHttpError, SandboxAuthError, SandboxConnectionError, SandboxTimeoutError, SandboxGrpcError,
  SandboxApiError, SandboxClaimError, SandboxPoolNotFoundError, SandboxColdStartError, SandboxClaimTimeoutError, SandboxClaimFailedError,
  SandboxPathError, SandboxSuspendedError, SandboxResumingError, SandboxProcessError,
} from './errors.js';
export type { PathSubject } from './errors.js';
