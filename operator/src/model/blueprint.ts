/**
 * What makes a pool member "the same" as its template, as a hash that fits in a label.
 *
 * Upstream labels members with NameHash over Go's `encoding/json` of the whole blueprint and falls
 * back to a semantic comparison when the label differs. We cannot reproduce Go's JSON bytes (field
 * order follows Go struct declarations, `omitempty` rules differ per field), so we do not try: our
 * `sandbox-template-hash` is NameHash over our own canonical JSON (sorted keys, absent and empty
 * values dropped) of exactly the fields the semantic comparison looks at. Consequences:
 * - our hash values differ from upstream's, so a member created by upstream is judged by the
 *   semantic comparison, as upstream itself does when its hash label differs;
 * - equal hashes mean semantically equal blueprints, so the fast path never disagrees with the slow
 *   one; upstream's hash also covers podTemplate metadata, which the comparison ignores, so a
 *   label-only template edit sends every member through the slow comparison;
 * - the hash covers the pod spec *after* secure defaults, so switching a template between Managed and
 *   Unmanaged (which changes the Pod's DNS settings) is a real change; upstream hashes the raw
 *   blueprint and misses it.
 */
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import type { Sandbox, SandboxSpec, SandboxTemplate } from './generated';
import { applySecureDefaults, applyUpstreamDefaults } from './secure-defaults';

/** The fields a SandboxTemplate and a Sandbox share (upstream's inlined SandboxBlueprint). */
export type SandboxBlueprint = Pick<SandboxSpec, 'podTemplate' | 'volumeClaimTemplates' | 'service'>;

/**
 * A value with object keys sorted and `undefined`, `null`, `[]` and `{}` dropped (Kubernetes treats
 * them all as "unset"). Array positions are kept: an element that normalises to nothing becomes null.
 * Returns undefined for a value that is itself unset.
 */
function normalize(value: unknown): unknown {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) {
    return value.length === 0 ? undefined : value.map((v) => normalize(v) ?? null);
  }
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = normalize((value as Record<string, unknown>)[key]);
      if (v !== undefined) out[key] = v;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return value;
}

/** Canonical JSON of `value`: the same for any two values Kubernetes considers equal (see normalize). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalize(value) ?? null);
}

/** The parts of a blueprint that decide whether a Sandbox is current: metadata is deliberately left out. */
function comparable(blueprint: SandboxBlueprint): unknown {
  return {
    podSpec: blueprint.podTemplate.spec,
    volumeClaimTemplates: (blueprint.volumeClaimTemplates ?? []).map((vct) => ({ name: vct.metadata?.name, spec: vct.spec })),
    service: blueprint.service,
  };
}

/** A template's current blueprint, ready to compare members against. */
export interface BlueprintFingerprint {
  /** Canonical JSON of the compared fields. */
  readonly canonical: string;
  /** NameHash of `canonical`: the `sandbox-template-hash` label value. */
  readonly hash: string;
  /**
   * Canonical JSON with only upstream's defaults (no hardening): how members built by upstream, or by
   * this operator before it hardened template Pods, look. They still match, so an upgrade does not
   * replace every warm member; the hardening reaches the members built after it.
   */
  readonly upstreamCanonical: string;
}

/** The fingerprint of the blueprint a Sandbox built from `template` gets (secure defaults applied). */
export function templateFingerprint(template: SandboxTemplate): BlueprintFingerprint {
  const withDefaults = (defaults: typeof applySecureDefaults): string => canonicalJson(comparable({
    ...template.spec,
    podTemplate: { ...template.spec.podTemplate, spec: defaults(template.spec.podTemplate.spec, template) },
  }));
  const canonical = withDefaults(applySecureDefaults);
  return { canonical, hash: NameHash.of(canonical), upstreamCanonical: withDefaults(applyUpstreamDefaults) };
}

/** Whether `sandbox`'s blueprint is semantically the template's (metadata ignored), with or without the hardening defaults. */
export function sandboxMatches(sandbox: Sandbox, fingerprint: BlueprintFingerprint): boolean {
  const actual = canonicalJson(comparable(sandbox.spec));
  return actual === fingerprint.canonical || actual === fingerprint.upstreamCanonical;
}

/**
 * The deprecated `sandbox-pod-template-hash` label value: NameHash of the canonical JSON of the
 * template's podTemplate. Informational only (nothing in the system reads it), kept because
 * external tools may select on its presence.
 */
export function podTemplateHash(template: SandboxTemplate): string {
  return NameHash.of(canonicalJson(template.spec.podTemplate));
}

/**
 * Whether `sandbox` is out of date for the pool's template: built for another template name, or with
 * a different blueprint. Our own hash label settles it when it matches; otherwise (a member made by
 * upstream or before a template edit) the blueprints are compared. An orphan's labels are not
 * trusted (anyone could have written them), so orphans are always compared.
 */
export function isStale(
  sandbox: Sandbox,
  templateName: string,
  fingerprint: BlueprintFingerprint,
  orphan: boolean,
  templateRefHash: string = NameHash.of(templateName),
): boolean {
  if (sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] !== templateRefHash) return true;
  if (!orphan && sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_HASH] === fingerprint.hash) return false;
  return !sandboxMatches(sandbox, fingerprint);
}

/**
 * `isStale` for many members at once. After a template edit every member's hash label differs and
 * each would need a full comparison, on every pool pass and every claim; members sharing an old
 * hash label were built from the same blueprint, so one comparison per label value answers for
 * all of them (upstream memoises the same way). Orphans are never memoised: their labels are not
 * trusted.
 */
export function staleCheck(templateName: string, fingerprint: BlueprintFingerprint): (sandbox: Sandbox, orphan: boolean) => boolean {
  const templateRefHash = NameHash.of(templateName);
  const byLabel = new Map<string, boolean>();
  return (sandbox, orphan) => {
    const label = sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_HASH];
    if (orphan || label === undefined || sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] !== templateRefHash) {
      return isStale(sandbox, templateName, fingerprint, orphan, templateRefHash);
    }
    let stale = byLabel.get(label);
    if (stale === undefined) {
      stale = isStale(sandbox, templateName, fingerprint, false, templateRefHash);
      byLabel.set(label, stale);
    }
    return stale;
  };
}
