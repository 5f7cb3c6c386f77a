/**
 * Every error the SDK throws. Callers branch on the class (`instanceof`), never on message text:
 * a bad option, an HTTP answer from the router or runtime (status, JSON body, sandbox), a request
 * that got no answer, and the ways a claim can fail to become Ready.
 */

/** The root of the SDK's errors. `sandbox` names the Sandbox involved, when there is one. */
export class SandboxError extends Error {
  public override readonly name: string = 'SandboxError';
  public readonly sandbox?: string;

  public constructor(message: string, options: { sandbox?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.sandbox = options.sandbox;
  }
}

/** An option or argument is wrong; the message names the field and how to fix it. */
export class SandboxConfigError extends SandboxError {
  public override readonly name = 'SandboxConfigError';
  public constructor(public readonly field: string, problem: string) {
    super(`${field}: ${problem}`);
  }
}

/** The router or the runtime answered with an error status. Which subclass, by the answer's shape: see `httpErrorOf`. */
export class SandboxHttpError extends SandboxError {
  public override readonly name: string = 'SandboxHttpError';
  /** The parsed JSON body (`{"detail": ...}` from the router, `{"message": ...}` from the runtime), or the text. */
  public readonly body: unknown;
  /** `detail` or `message` from the body, when it has one. */
  public readonly detail?: string;
  /** The answer's `Retry-After`, in seconds, when it had one (429, 503). */
  public retryAfterSeconds?: number;

  public constructor(
    public readonly status: number,
    body: unknown,
    public readonly method: string,
    /** The request's path as the caller named it (a file call shows the file's path as given, not as encoded on the wire). */
    public readonly path: string,
    sandbox?: string,
  ) {
    const detail = detailOf(body);
    super(`${method} ${path}${sandbox ? ` (sandbox ${sandbox})` : ''}: HTTP ${status}${detail ? `: ${detail}` : ''}`, { sandbox });
    this.body = body;
    this.detail = detail;
  }
}

/** 401, or a 403 that is no path refusal: the router (or runtime) refused the caller's credentials or rights. */
export class SandboxAuthError extends SandboxHttpError {
  public override readonly name = 'SandboxAuthError';
}

/** What a path refusal is about: a file path, or a command's working directory. */
export interface PathSubject {
  readonly field: 'path' | 'cwd';
  /** As the caller gave it. */
  readonly path: string;
}

/**
 * The runtime refused a path: a file path or `cwd` that leaves the workspace (403, also through a
 * symbolic link), one the runtime may not read (403), or a `cwd` that is no directory (404). Not an
 * authentication problem: the credentials were fine. `path` is the refused path as the caller gave
 * it, `field` says which argument it was, `reason` is the runtime's explanation.
 */
export class SandboxPathError extends SandboxHttpError {
  public override readonly name = 'SandboxPathError';
  public readonly field: 'path' | 'cwd';
  public readonly reason: string;
  /** The request's path (`path` is the refused one). */
  public readonly requestPath: string;

  public constructor(status: number, body: unknown, method: string, requestPath: string, subject: PathSubject, reason: string, sandbox?: string) {
    super(status, body, method, subject.path, sandbox);
    this.field = subject.field;
    this.reason = reason;
    this.requestPath = requestPath;
    this.message = `${method} ${requestPath}${sandbox ? ` (sandbox ${sandbox})` : ''}: HTTP ${status}: the runtime refused ${subject.field} "${subject.path}": ${reason}`;
  }
}

/**
 * The Sandbox is suspended (its `spec.operatingMode` is Suspended) and the router may not wake it
 * (no idle policy with `resumeOnRequest`): the router refused the request at once, nothing ran.
 * Resume it (`sandbox.resume()`, `client.connect({ claim, resume: true })`) and try again.
 */
export class SandboxSuspendedError extends SandboxHttpError {
  public override readonly name = 'SandboxSuspendedError';

  public constructor(status: number, body: unknown, method: string, path: string, sandbox?: string) {
    super(status, body, method, path, sandbox);
    this.message = `sandbox ${sandbox ?? '(unnamed)'} is suspended: resume it with sandbox.resume() (or client.connect({ claim, resume: true })) and try again; `
      + `or claim it with idlePolicy: { suspendAfter, resumeOnRequest: true }, so the router wakes it on the next request (${method} ${path}: HTTP ${status})`;
  }
}

/**
 * The Sandbox was suspended while idle and the router is waking it (its idle policy has
 * `resumeOnRequest`), but it did not serve within the call's time: the router held the request
 * until its `X-Sandbox-Timeout` or its `--resume-wait` and answered 503 with Retry-After. Nothing
 * ran. The SDK tries again by itself within the call's time; this is what is left when that ran
 * out. Retry the call, or give it a longer `timeoutMs` (the client's `requestTimeoutMs`).
 */
export class SandboxResumingError extends SandboxHttpError {
  public override readonly name = 'SandboxResumingError';

  public constructor(status: number, body: unknown, method: string, path: string, sandbox?: string) {
    super(status, body, method, path, sandbox);
    this.message = `sandbox ${sandbox ?? '(unnamed)'} is still resuming (it was suspended while idle, and the router is waking it) and did not answer within the call's time: `
      + `retry the call, or give it a longer timeoutMs (the client's requestTimeoutMs) (${method} ${path}: HTTP ${status})`;
  }
}

/** The router's reason for refusing a suspended sandbox: its `X-Sandbox-Reason` header and its body's `reason`. */
export const SUSPENDED_REASON = 'SandboxSuspended';
/** The router's reason for a request it held for a resume that did not finish in time (503 with Retry-After). */
export const RESUMING_REASON = 'SandboxResuming';
/** The header the router names the reason of its own refusals in (HTTP and gRPC alike). */
export const REASON_HEADER = 'x-sandbox-reason';

/**
 * The error for an error answer, decided by the answer's shape, never by its wording:
 * - 409 with `X-Sandbox-Reason: SandboxSuspended` (or `"reason": "SandboxSuspended"` in the body):
 *   the router's refusal of a suspended sandbox → SandboxSuspendedError.
 * - 503 with `X-Sandbox-Reason: SandboxResuming` (or that `reason` in the body): the router's wait
 *   for a sandbox it is waking ran out → SandboxResumingError. It is sent again only with
 *   Retry-After, the mark every refusal that ran nothing carries (see retry.ts), so a sandbox's own
 *   503 naming that reason earns no retry a plain 503 would not.
 * - 403 or 404 whose JSON body has a string `reason` and a string `message` and no `detail`: the
 *   runtime's refusal of a path (`{"message": "Access denied", "reason": ...}`, upstream's 403 with
 *   our `reason`; `{"message": "cwd not found", "reason": ...}`) → SandboxPathError. The router's own
 *   refusals always carry `detail` (its 403 is `{"detail": "forbidden"}`), and so do the runtime's
 *   401s; a plain missing file is `{"message": "File not found"}` (no `reason`), a SandboxHttpError.
 * - 401, and any other 403 → SandboxAuthError.
 * - anything else → SandboxHttpError.
 * `subject` names the path the request was about, when the caller knows it.
 */
export function httpErrorOf(
  status: number, body: unknown, headers: Readonly<Record<string, unknown>>, method: string, path: string, sandbox?: string, subject?: PathSubject,
): SandboxHttpError {
  const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? body as Record<string, unknown> : undefined;
  if (status === 409 && (headers[REASON_HEADER] === SUSPENDED_REASON || record?.reason === SUSPENDED_REASON)) {
    return new SandboxSuspendedError(status, body, method, path, sandbox);
  }
  if (status === 503 && (headers[REASON_HEADER] === RESUMING_REASON || record?.reason === RESUMING_REASON)) {
    return new SandboxResumingError(status, body, method, path, sandbox);
  }
  if ((status === 403 || status === 404) && record && typeof record.reason === 'string' && typeof record.message === 'string' && !('detail' in record)) {
    return new SandboxPathError(status, body, method, path, subject ?? { field: 'path', path }, record.reason, sandbox);
  }
  if (status === 401 || status === 403) return new SandboxAuthError(status, body, method, path, sandbox);
  return new SandboxHttpError(status, body, method, path, sandbox);
}

/** The request got no answer: connection refused or reset, or the port-forward failed. */
export class SandboxConnectionError extends SandboxError {
  public override readonly name = 'SandboxConnectionError';
  public constructor(message: string, public readonly code: string | undefined, options: { sandbox?: string; cause?: unknown } = {}) {
    super(message, options);
  }
}

/** A gRPC call to sandboxd's ProcessService failed: `code` is the gRPC status (16 unauthenticated, 7 permission denied, 5 not found, 14 unavailable, ...). */
export class SandboxGrpcError extends SandboxError {
  public override readonly name = 'SandboxGrpcError';
  public constructor(public readonly code: number, public readonly details: string, sandbox?: string) {
    super(`gRPC status ${code}${details ? `: ${details}` : ''}${sandbox ? ` (sandbox ${sandbox})` : ''}`, { sandbox });
  }
}

/** The request took longer than its `timeoutMs`. */
export class SandboxTimeoutError extends SandboxError {
  public override readonly name = 'SandboxTimeoutError';
}

/**
 * A process of the runtime's process API (a background process, or a streamed `run` being
 * followed) cannot be used as asked: it is gone (the runtime restarted, or it was deleted or
 * expired), its output could not be followed again within the retries, or the runtime refused the
 * operation (its stdin is closed, it has ended). `processId` names it; the message says what to do.
 */
export class SandboxProcessError extends SandboxError {
  public override readonly name = 'SandboxProcessError';
  public constructor(message: string, public readonly processId: string, options: { sandbox?: string; cause?: unknown } = {}) {
    super(message, options);
  }
}

/** A claim did not become Ready. Carries the claim's last `Ready` condition reason and message. */
export class SandboxClaimError extends SandboxError {
  public override readonly name: string = 'SandboxClaimError';
  public constructor(
    message: string,
    public readonly claim: string,
    public readonly namespace: string,
    public readonly reason: string | undefined,
    public readonly conditionMessage: string | undefined,
    options: { sandbox?: string; cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/** The claim's SandboxWarmPool (or its SandboxTemplate) does not exist. */
export class SandboxPoolNotFoundError extends SandboxClaimError {
  public override readonly name = 'SandboxPoolNotFoundError';
}

/**
 * The pool had no warm Sandbox, so the claim needed a cold start: raised at once with
 * `coldStart: 'fail'`, or when the wait ran out while the cold start was still under way.
 */
export class SandboxColdStartError extends SandboxClaimError {
  public override readonly name = 'SandboxColdStartError';
}

/** `timeoutMs` ran out before the claim was Ready (and no cold start was seen). */
export class SandboxClaimTimeoutError extends SandboxClaimError {
  public override readonly name = 'SandboxClaimTimeoutError';
}

/** The claim reached a state waiting cannot fix (expired, invalid, its Pod failed), or was deleted. */
export class SandboxClaimFailedError extends SandboxClaimError {
  public override readonly name = 'SandboxClaimFailedError';
}

/** The Kubernetes API refused a request (creating, reading, patching or deleting a claim or Sandbox). */
export class SandboxApiError extends SandboxError {
  public override readonly name = 'SandboxApiError';
  public constructor(
    message: string,
    public readonly status: number | undefined,
    public readonly body: unknown,
    options: { sandbox?: string; cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

function detailOf(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() === '' ? undefined : body.trim().slice(0, 500);
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  for (const key of ['detail', 'message']) {
    if (typeof record[key] === 'string') return record[key] as string;
  }
  return record.detail === undefined ? undefined : JSON.stringify(record.detail);
}
