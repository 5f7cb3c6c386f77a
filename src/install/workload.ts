import { ErrorList, checkQuantity } from '../api/validation';
import { ContainerResources, dropUndefined } from '../container';

// The operator and the router both run under the restricted Pod Security Standard that the
// install's Namespace enforces, so they share these contexts.
export const POD_SECURITY = { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } };
export const CONTAINER_SECURITY = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } };

export function imageRef(image: string, digest: string | undefined): string {
  return digest ? `${image}@${digest}` : image;
}

export function resourcesOf(resources: ContainerResources | undefined, fallback: ContainerResources): { [key: string]: unknown } {
  return dropUndefined({ requests: (resources ?? fallback).requests, limits: (resources ?? fallback).limits });
}

export function checkImage(errors: ErrorList, prefix: string, image: string | undefined, digest: string | undefined): void {
  if (image !== undefined && (typeof image !== 'string' || image === '' || /\s/.test(image))) {
    errors.check(`${prefix}image`, `${JSON.stringify(image)} must be a non-empty image reference without spaces, e.g. "registry.example.com/agent-sandbox-operator:v0.1.0"`);
  }
  if (digest !== undefined) {
    errors.check(`${prefix}imageDigest`, typeof digest === 'string' && /^sha256:[a-f0-9]{64}$/.test(digest)
      ? undefined : `${JSON.stringify(digest)} must be "sha256:" followed by 64 lowercase hex digits, as \`crane digest\` or \`docker buildx imagetools inspect\` print it`);
    if (typeof image === 'string' && image.includes('@')) {
      errors.check(`${prefix}image`, `"${image}" already pins a digest; drop the "@..." part or the ${prefix}imageDigest prop`);
    }
  }
}

export function checkResources(errors: ErrorList, field: string, resources: ContainerResources | undefined): void {
  for (const kind of ['requests', 'limits'] as const) {
    for (const [resource, quantity] of Object.entries(resources?.[kind] ?? {})) {
      errors.check(`${field}.${kind}.${resource}`, checkQuantity(quantity));
    }
  }
}
