import { IConstruct } from 'constructs';

/** The operator image an install runs, as a sandbox runtime's init container takes it. */
export interface InstalledOperatorImage {
  /** The image reference, with `@sha256:...` when the install pins a digest. */
  readonly image: string;
  /** The install's pull policy, when it sets one. */
  readonly imagePullPolicy?: string;
}

// Installs (AgentSandboxSystem, AgentSandboxExtensions) and the image each was given. Kept beside
// the constructs rather than on them, so nothing but this lookup depends on it.
const INSTALLS = new WeakMap<IConstruct, InstalledOperatorImage>();

/** Record that `install` runs the operator `image`, for {@link installedOperatorImage}. */
export function recordOperatorImage(install: IConstruct, image: InstalledOperatorImage): void {
  INSTALLS.set(install, image);
}

/**
 * The operator image of the installs in `scope`'s App, looked up when the App is synthesized (so a
 * template in another chart, or made before the install, finds it too): `undefined` when the App
 * has no install; an `error` sentence when its installs run different images, which leaves no one
 * image to follow.
 */
export function installedOperatorImage(scope: IConstruct): InstalledOperatorImage | { error: string } | undefined {
  const found = scope.node.root.node.findAll().flatMap((c) => {
    const image = INSTALLS.get(c);
    return image ? [{ path: c.node.path, ...image }] : [];
  });
  const distinct = [...new Map(found.map((f) => [`${f.image} ${f.imagePullPolicy ?? ''}`, f])).values()];
  if (distinct.length <= 1) return distinct[0] && { image: distinct[0].image, imagePullPolicy: distinct[0].imagePullPolicy };
  const listed = distinct.map((f) => `${f.path} runs "${f.image}"${f.imagePullPolicy ? ` (${f.imagePullPolicy})` : ''}`).join(', ');
  return { error: `the App holds installs with different operator images (${listed}); set runtime.image to the one this template's runtime should come from` };
}
