/**
 * Throw-away PKI for one local control plane, made with the system `openssl`:
 * a CA, one certificate used both as the apiserver's serving cert and as the admin client
 * cert (O=system:masters, like kwokctl does), and a key pair for service-account tokens.
 * One cert for both roles keeps the harness small; nothing here is meant to be secure.
 * P-256 keys instead of RSA cut key generation from about a second to a few milliseconds.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { stringify as toYaml } from 'yaml';

export interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  /** Serving and admin client certificate (SANs: localhost, kubernetes.default…, 127.0.0.1, 198.18.0.1, 198.19.0.1). */
  readonly adminCert: string;
  readonly adminKey: string;
  readonly saKey: string;
  readonly saPub: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`openssl ${args[0]} failed: ${err.stderr?.toString().trim() || err.message}`);
  }
}

export function generatePki(dir: string): Pki {
  fs.mkdirSync(dir, { recursive: true });
  const days = '3650';
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];
  openssl(['req', '-x509', ...ec, '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
    '-days', days, '-subj', '/CN=cdk8s-agent-sandbox-test-ca'], dir);
  openssl(['req', ...ec, '-nodes', '-keyout', 'admin.key', '-out', 'admin.csr',
    '-subj', '/O=system:masters/CN=cdk8s-agent-sandbox-admin'], dir);
  fs.writeFileSync(path.join(dir, 'admin.ext'), [
    'subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,' +
      'DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,' +
      // The real-node mode's bridge address (API server, kubelet) and `kubernetes` Service ClusterIP.
      'IP:198.18.0.1,IP:198.19.0.1',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth,clientAuth',
    'basicConstraints=critical,CA:FALSE',
    '',
  ].join('\n'));
  openssl(['x509', '-req', '-in', 'admin.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'admin.crt', '-days', days, '-extfile', 'admin.ext'], dir);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'sa.key'], dir);
  openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  const p = (f: string) => path.join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    adminCert: p('admin.crt'),
    adminKey: p('admin.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
  };
}

/** A kubeconfig with the certificates embedded, so copies stay valid wherever they are written. */
export function kubeconfigYaml(pki: Pki, server: string, name = 'cdk8s-agent-sandbox'): string {
  const b64 = (f: string) => fs.readFileSync(f).toString('base64');
  return toYaml({
    'apiVersion': 'v1',
    'kind': 'Config',
    'clusters': [{ name, cluster: { 'server': server, 'certificate-authority-data': b64(pki.caCert) } }],
    'users': [{ name: `${name}-admin`, user: { 'client-certificate-data': b64(pki.adminCert), 'client-key-data': b64(pki.adminKey) } }],
    'contexts': [{ name, context: { cluster: name, user: `${name}-admin` } }],
    'current-context': name,
  });
}
