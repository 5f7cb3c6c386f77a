/**
 * How to reach one API server, and what the operator's commands need of that without reading a
 * kubeconfig (kept apart from kubeconfig.ts and cluster-config.ts, which load YAML and client-node:
 * a process on its service account never evaluates them).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Credentials } from './credentials';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** How to reach and authenticate to one API server. */
export interface ClusterConnection {
  /**
   * `https://host:port` (or `http://` for a local proxy), possibly with a path that every request
   * goes under (`https://rancher.example/k8s/clusters/c-abc`).
   */
  readonly server: string;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly token?: string;
  /** Read the bearer token from this file, re-read periodically: projected tokens rotate. */
  readonly tokenFile?: string;
  readonly insecureSkipTlsVerify?: boolean;
  /** TLS server name when it differs from the URL's host. */
  readonly tlsServerName?: string;
  /** An `http://`, `https://` or `socks5://` proxy to reach the server through (kubeconfig proxy-url). */
  readonly proxyUrl?: string;
  /**
   * Where requests get their authentication from when it changes at run time (exec plugins, auth
   * providers, token files); when set, token, tokenFile, cert and key are not used.
   */
  readonly credentials?: Credentials;
  /** The context's namespace (kubeconfig) or the pod's namespace (in-cluster). */
  readonly namespace?: string;
  /** Where this came from, for the start-up log line. */
  readonly source: string;
}

/** The cluster connection cannot be configured; main prints the message without a stack trace. */
export class ConfigError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The namespace this process runs in, from the service-account mount; undefined outside a pod. */
export function podNamespace(dir = SERVICE_ACCOUNT_DIR): string | undefined {
  try {
    return fs.readFileSync(path.join(dir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
