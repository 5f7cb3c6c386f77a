import { Duration } from 'cdk8s';
import { propName } from './api/spelling';
import { ErrorList } from './api/validation';
import { dropUndefined } from './container';

/** When and how often a probe runs, and how many results flip it. */
export interface ProbeTiming {
  /** Wait after the container starts before the first probe. @default - Kubernetes' 0 seconds */
  readonly initialDelay?: Duration;
  /** Time between probes. @default - Kubernetes' 10 seconds */
  readonly period?: Duration;
  /** Time a probe may take. @default - Kubernetes' 1 second */
  readonly timeout?: Duration;
  /** Consecutive failures that count as failed. @default - Kubernetes' 3 */
  readonly failureThreshold?: number;
  /** Consecutive successes that count as passing again; must be 1 for liveness and startup probes. @default - Kubernetes' 1 */
  readonly successThreshold?: number;
}

/** Which port a probe connects to: a number or the name of one of the container's ports. */
export interface ProbePortOptions extends ProbeTiming {
  /** Port number, 1-65535. Give this or `portName`. @default - `portName` */
  readonly port?: number;
  /** Name of one of the container's `ports`. Give this or `port`. @default - `port` */
  readonly portName?: string;
}

/** Options of an HTTP GET probe. */
export interface HttpGetProbeOptions extends ProbePortOptions {
  /** `HTTP` or `HTTPS` (certificates are not verified). @default "HTTP" */
  readonly scheme?: string;
  /** Extra request headers. @default - none */
  readonly headers?: { [name: string]: string };
}

/** Options of a gRPC health-check probe. */
export interface GrpcProbeOptions extends ProbeTiming {
  /** The `service` of the gRPC HealthCheckRequest. @default - the server's overall health */
  readonly service?: string;
}

/**
 * A liveness, readiness or startup probe of a container: an HTTP GET, a TCP connect, a command,
 * or a gRPC health check.
 */
export class Probe {
  /** An HTTP GET of `path`, passing on any 2xx or 3xx answer. */
  public static httpGet(path: string, options: HttpGetProbeOptions): Probe {
    return new Probe('httpGet', options, { path, scheme: options.scheme, headers: options.headers }, true);
  }

  /** A TCP connection to the port, passing when it opens. */
  public static tcpSocket(options: ProbePortOptions): Probe {
    return new Probe('tcpSocket', options, {}, true);
  }

  /** A command run in the container, passing when it exits 0. */
  public static exec(command: string[], options: ProbeTiming = {}): Probe {
    return new Probe('exec', options, { command }, false);
  }

  /** A gRPC health check (grpc.health.v1) on `port`. */
  public static grpc(port: number, options: GrpcProbeOptions = {}): Probe {
    return new Probe('grpc', { ...options, port }, { service: options.service }, false);
  }

  private constructor(
    private readonly handler: 'httpGet' | 'tcpSocket' | 'exec' | 'grpc',
    private readonly options: ProbePortOptions,
    private readonly fields: { [key: string]: unknown },
    private readonly namedPortAllowed: boolean,
  ) {}

  /** @internal Check the probe; `portNames` are the container's named ports. */
  public _validate(errors: ErrorList, field: string, portNames: string[], liveOrStartup: boolean): void {
    const o = this.options;
    if (this.handler !== 'exec') {
      if ((o.port === undefined) === (o.portName === undefined) || (!this.namedPortAllowed && o.portName !== undefined)) {
        errors.prop(`${field}.port`, this.namedPortAllowed ? `give exactly one of ${propName('port')} (a number) or ${propName('portName')} (a name from the container's ports)` : 'must be a port number');
      }
      if (o.port !== undefined && (!Number.isInteger(o.port) || o.port < 1 || o.port > 65535)) {
        errors.prop(`${field}.port`, `${o.port} is not a port; use an integer from 1 to 65535`);
      }
      if (o.portName !== undefined && !portNames.includes(o.portName)) {
        errors.prop(`${field}.portName`, `"${o.portName}" is not the name of one of the container's ports (${portNames.length ? portNames.map((n) => `"${n}"`).join(', ') : 'it names none'}); add the port or use its number`);
      }
    }
    if (this.handler === 'httpGet') {
      const path = this.fields.path as string;
      if (!path.startsWith('/')) errors.prop(`${field}.path`, `"${path}" must start with "/", e.g. "/healthz"`);
      const scheme = this.fields.scheme as string | undefined;
      if (scheme !== undefined && scheme !== 'HTTP' && scheme !== 'HTTPS') errors.prop(`${field}.scheme`, `"${scheme}" must be "HTTP" or "HTTPS"`);
    }
    if (this.handler === 'exec' && (this.fields.command as string[]).length === 0) {
      errors.prop(`${field}.command`, 'must not be empty; give the program and its arguments, e.g. ["cat", "/tmp/ready"]');
    }
    for (const [name, d, min] of [['initialDelay', o.initialDelay, 0], ['period', o.period, 1], ['timeout', o.timeout, 1]] as const) {
      if (d === undefined) continue;
      const seconds = d.toSeconds({ integral: false });
      if (!Number.isInteger(seconds) || seconds < min) errors.prop(`${field}.${name}`, `${seconds}s must be a whole number of seconds of at least ${min}`);
    }
    for (const [name, n] of [['failureThreshold', o.failureThreshold], ['successThreshold', o.successThreshold]] as const) {
      if (n !== undefined && (!Number.isInteger(n) || n < 1)) errors.prop(`${field}.${name}`, `${n} must be a whole number of at least 1`);
    }
    if (liveOrStartup && o.successThreshold !== undefined && o.successThreshold !== 1) {
      errors.prop(`${field}.successThreshold`, `must be 1 for liveness and startup probes (it is ${o.successThreshold}); leave it unset`);
    }
  }

  /** @internal The probe as core/v1 Probe JSON. */
  public _toKube(): { [key: string]: unknown } {
    const o = this.options;
    const port = o.port ?? o.portName;
    let handler: { [key: string]: unknown };
    switch (this.handler) {
      case 'httpGet':
        handler = dropUndefined({
          path: this.fields.path,
          port,
          scheme: this.fields.scheme,
          httpHeaders: this.fields.headers
            ? Object.entries(this.fields.headers as { [k: string]: string }).map(([name, value]) => ({ name, value })) : undefined,
        });
        break;
      case 'tcpSocket': handler = { port }; break;
      case 'exec': handler = { command: this.fields.command }; break;
      default: handler = dropUndefined({ port, service: this.fields.service });
    }
    return dropUndefined({
      [this.handler]: handler,
      initialDelaySeconds: o.initialDelay?.toSeconds(),
      periodSeconds: o.period?.toSeconds(),
      timeoutSeconds: o.timeout?.toSeconds(),
      failureThreshold: o.failureThreshold,
      successThreshold: o.successThreshold,
    });
  }
}
