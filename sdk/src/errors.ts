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

/** The router or the runtime answered with an error status. */
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
    public readonly path: string,
    sandbox?: string,
  ) {
    const detail = detailOf(body);
    super(`${method} ${path}${sandbox ? ` (sandbox ${sandbox})` : ''}: HTTP ${status}${detail ? `: ${detail}` : ''}`, { sandbox });
    this.body = body;
    this.detail = detail;
  }
}

/** 401 or 403: the router (or runtime) refused the caller's credentials. */
export class SandboxAuthError extends SandboxHttpError {
  public override readonly name = 'SandboxAuthError';
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
