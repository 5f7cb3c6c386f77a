import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { coreCrdManifests, extensionCrdManifests } from './api/crd-manifests';
import { _guardChart } from './chart-guards';
import { _dropClusterScopedNamespaces } from './object-ref';

/** Props of {@link SandboxCrds}. */
export interface SandboxCrdsProps {
  /** Include the extension CRDs (SandboxTemplate, SandboxWarmPool, SandboxClaim). @default true */
  readonly extensions?: boolean;
  /** Include the core Sandbox CRD. @default true */
  readonly core?: boolean;
}

/**
 * The agents.x-k8s.io v1beta1 CustomResourceDefinitions, wire-compatible with upstream
 * agent-sandbox: Sandbox, and optionally SandboxTemplate, SandboxWarmPool and SandboxClaim.
 */
export class SandboxCrds extends Construct {
  /** The CRD objects, in a stable order (Sandbox, SandboxTemplate, SandboxWarmPool, SandboxClaim). */
  public readonly apiObjects: ApiObject[];

  public constructor(scope: Construct, id: string, props: SandboxCrdsProps = {}) {
    super(scope, id);
    _guardChart(this);
    const manifests = [
      ...(props.core ?? true ? coreCrdManifests() : []),
      ...(props.extensions ?? true ? extensionCrdManifests() : []),
    ];
    this.apiObjects = manifests.map((manifest) => {
      const { apiVersion, kind, ...rest } = manifest as { apiVersion: string; kind: string };
      const name = (rest as { metadata: { name: string } }).metadata.name;
      return new ApiObject(this, name, { apiVersion, kind, ...rest });
    });
    _dropClusterScopedNamespaces(this);
  }
}
