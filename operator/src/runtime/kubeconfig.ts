/**
 * How to reach one API server (ClusterConnection), and a small kubeconfig reader for the CommonJS
 * tools (the local control plane, pod runner, benchmark and integration tests), which read the
 * certificate kubeconfigs the control plane writes. The operator itself resolves its connection
 * with @kubernetes/client-node's KubeConfig, like other Kubernetes clients (cluster-config.ts):
 * that module is ESM-only, so it cannot live here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, type ClusterConnection } from './connection';

export { ConfigError, SERVICE_ACCOUNT_DIR, podNamespace, type ClusterConnection } from './connection';

/**
 * Reads kubeconfig files merged like kubectl does: the first file to define a cluster, user or
 * context by name wins, and the first current-context set wins.
 */
export function fromKubeconfigFiles(files: string[]): ClusterConnection {
  const clusters = new Map<string, { cluster: any; dir: string }>();
  const users = new Map<string, { user: any; dir: string }>();
  const contexts = new Map<string, any>();
  let current: string | undefined;
  let found = 0;
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      // kubectl skips missing files in a KUBECONFIG list, but an explicitly named one must exist.
      if (files.length === 1) throw new ConfigError(`cannot read kubeconfig ${file}: ${(e as Error).message}`);
      continue;
    }
    found++;
    const doc = parseYaml(text) ?? {};
    const dir = path.dirname(path.resolve(file));
    for (const c of doc.clusters ?? []) if (c?.name && !clusters.has(c.name)) clusters.set(c.name, { cluster: c.cluster ?? {}, dir });
    for (const u of doc.users ?? []) if (u?.name && !users.has(u.name)) users.set(u.name, { user: u.user ?? {}, dir });
    for (const c of doc.contexts ?? []) if (c?.name && !contexts.has(c.name)) contexts.set(c.name, c.context ?? {});
    current ??= doc['current-context'] || undefined;
  }
  const where = files.join(path.delimiter);
  if (found === 0) throw new ConfigError(`none of the kubeconfig files exist: ${where}`);
  if (!current) throw new ConfigError(`kubeconfig ${where} sets no current-context`);
  const context = contexts.get(current);
  if (!context) throw new ConfigError(`kubeconfig ${where}: current-context "${current}" is not defined`);
  const cluster = clusters.get(context.cluster);
  if (!cluster?.cluster.server) throw new ConfigError(`kubeconfig ${where}: cluster "${context.cluster}" of context "${current}" has no server`);
  const user = users.get(context.user) ?? { user: {}, dir: cluster.dir };
  for (const unsupported of ['exec', 'auth-provider', 'username']) {
    if (user.user[unsupported]) {
      throw new ConfigError(`kubeconfig ${where}: users[name="${context.user}"].user.${unsupported} is set, which this reader for the local tools `
        + 'does not run: give the user a client certificate, a token or a tokenFile (the operator itself runs exec plugins and auth providers)');
    }
  }
  const c = cluster.cluster;
  const u = user.user;
  return {
    server: String(c.server),
    ca: material(c['certificate-authority-data'], c['certificate-authority'], cluster.dir),
    insecureSkipTlsVerify: c['insecure-skip-tls-verify'] === true,
    tlsServerName: c['tls-server-name'] || undefined,
    proxyUrl: c['proxy-url'] || undefined,
    cert: material(u['client-certificate-data'], u['client-certificate'], user.dir),
    key: material(u['client-key-data'], u['client-key'], user.dir),
    token: u.token || undefined,
    tokenFile: u.tokenFile ? path.resolve(user.dir, u.tokenFile) : undefined,
    namespace: context.namespace || undefined,
    source: `kubeconfig ${where} (context ${current})`,
  };
}

/** Inline base64 data, or a file path relative to the kubeconfig that named it. */
function material(data: string | undefined, file: string | undefined, dir: string): Buffer | undefined {
  if (data) return Buffer.from(data, 'base64');
  if (file) return fs.readFileSync(path.resolve(dir, file));
  return undefined;
}

