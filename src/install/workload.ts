import { IConstruct } from 'constructs';
import { REFERENCED_KINDS } from '../api/object-kinds';
import { propName, staticMethodName } from '../api/spelling';
import { ErrorList, checkContainerResources, checkQualifiedName, checkStringMap } from '../api/validation';
import { SandboxToleration } from '../blueprint';
import { ContainerResources, dropUndefined } from '../container';
import { EnvFrom, EnvValue, _checkEnvName } from '../env';
import { ObjectRef, _checkRef, _resolveRef } from '../object-ref';
import {
  SchedulingAffinity, TopologySpreadConstraint, _affinityToKube, _checkAffinity, _checkNodeSelector, _checkSpread,
  _checkTolerations, _spreadToKube, _tolerationsToKube,
} from '../scheduling';

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
      errors.check(`${prefix}image`, `"${image}" already pins a digest; drop the "@..." part or the ${propName(`${prefix}imageDigest`)} prop`);
    }
  }
}

/** Check an install container's resources as the API server does (see checkContainerResources). */
export function checkResources(errors: ErrorList, field: string, resources: ContainerResources | undefined): void {
  checkContainerResources(errors, field, resources);
}

/**
 * Extra environment variables of an install's container: the operator's (the props of
 * `AgentSandboxSystem` and `AgentSandboxExtensions`) or the router's (`router`).
 */
export interface InstallEnvOptions {
  /**
   * Environment variables by name, such as `HTTPS_PROXY` or `NODE_OPTIONS`. Names are letters,
   * digits, `_`, `-` and `.`, not starting with a digit.
   * @default - none
   */
  readonly env?: { [name: string]: string };
  /**
   * Environment variables whose values come from Secret or ConfigMap keys of the install namespace,
   * or Pod fields (`valueFrom`), such as `PROXY_PASSWORD` mapped to
   * `EnvValue.fromSecretKey(ObjectRef.fromName('proxy'), 'password')`. Names must not repeat those of
   * `env`.
   * @default - none
   */
  readonly envValues?: { [name: string]: EnvValue };
  /** Every key of these Secrets and ConfigMaps of the install namespace as variables (`envFrom`). @default - none */
  readonly envFrom?: EnvFrom[];
}

/** Check `env`, `envValues` and `envFrom` of a container in `namespace`; fields start with `prefix` (`''` or `router.`). */
export function checkEnv(errors: ErrorList, prefix: string, p: InstallEnvOptions, namespace: string): void {
  const env = checkStringMap(p.env);
  errors.check(`${prefix}env`, env);
  for (const name of env === undefined ? Object.keys(p.env ?? {}) : []) errors.check(`${prefix}env["${name}"]`, _checkEnvName(name));
  const values = p.envValues;
  if (values !== undefined && (values === null || typeof values !== 'object' || Array.isArray(values))) {
    errors.check(`${prefix}envValues`, `must be a map from variable name to EnvValue, such as TOKEN to ${staticMethodName('EnvValue', 'fromSecretKey')} of a Secret and its key`);
  } else {
    for (const [name, value] of Object.entries(values ?? {})) {
      const field = `${prefix}envValues["${name}"]`;
      errors.check(field, _checkEnvName(name));
      if (p.env?.[name] !== undefined) errors.check(field, `is also set in ${propName(`${prefix}env`)}; give each variable once, in ${propName('env')} or in ${propName('envValues')}`);
      if (value instanceof EnvValue) value._validate(errors, field, namespace);
      else errors.check(field, 'must be an EnvValue, made from a Secret key, a ConfigMap key or a Pod field');
    }
  }
  if (p.envFrom !== undefined && !Array.isArray(p.envFrom)) {errors.check(`${prefix}envFrom`, 'must be a list of EnvFrom');} else {
    (p.envFrom ?? []).forEach((e, i) => {
      if (e instanceof EnvFrom) e._validate(errors, `${prefix}envFrom[${i}]`, namespace);
      else errors.check(`${prefix}envFrom[${i}]`, 'must be an EnvFrom, made from a Secret or a ConfigMap');
    });
  }
}

/** `env` and `envFrom` of the container, checked by {@link checkEnv}; absent when there are none. */
export function envOf(prefix: string, p: InstallEnvOptions, namespace: string): { env?: object[]; envFrom?: object[] } {
  const env = [
    ...Object.entries(p.env ?? {}).map(([name, value]) => ({ name, value })),
    ...Object.entries(p.envValues ?? {}).map(([name, value]) => ({ name, valueFrom: value._toKube(`${prefix}envValues["${name}"]`, namespace) })),
  ];
  const envFrom = (p.envFrom ?? []).map((e, i) => e._toKube(`${prefix}envFrom[${i}]`, namespace));
  return dropUndefined({ env: env.length ? env : undefined, envFrom: envFrom.length ? envFrom : undefined });
}

/** Where an install's Pods run, as the props give it. */
export interface Placement {
  readonly nodeSelector?: { [key: string]: string };
  readonly tolerations?: SandboxToleration[];
  readonly affinity?: SchedulingAffinity;
  readonly topologySpreadConstraints?: TopologySpreadConstraint[];
  readonly priorityClass?: ObjectRef | IConstruct;
}

/** Check a placement; fields start with `prefix`; `podLabels` are what spread constraints count by default. */
export function checkPlacement(errors: ErrorList, prefix: string, p: Placement, podLabels: { [key: string]: string }): void {
  const selector = checkStringMap(p.nodeSelector);
  errors.check(`${prefix}nodeSelector`, selector);
  if (selector === undefined) _checkNodeSelector(errors, `${prefix}nodeSelector`, p.nodeSelector);
  _checkTolerations(errors, `${prefix}tolerations`, p.tolerations);
  _checkAffinity(errors, `${prefix}affinity`, p.affinity);
  _checkSpread(errors, `${prefix}topologySpreadConstraints`, p.topologySpreadConstraints, podLabels);
  _checkRef(errors, `${prefix}priorityClass`, p.priorityClass, REFERENCED_KINDS.priorityClass, undefined);
}

/** The Pod spec fields of a checked placement; empty selectors and lists render nothing. */
export function placementOf(prefix: string, p: Placement, podLabels: { [key: string]: string }): { [key: string]: unknown } {
  return dropUndefined({
    priorityClassName: _resolveRef(`${prefix}priorityClass`, p.priorityClass, REFERENCED_KINDS.priorityClass, undefined),
    nodeSelector: Object.keys(p.nodeSelector ?? {}).length ? { ...p.nodeSelector } : undefined,
    tolerations: p.tolerations?.length ? _tolerationsToKube(p.tolerations) : undefined,
    affinity: _affinityToKube(p.affinity),
    topologySpreadConstraints: _spreadToKube(p.topologySpreadConstraints, podLabels),
  });
}

/** Check ServiceAccount annotations (workload identity and the like): qualified-name keys, string values. */
export function checkAnnotations(errors: ErrorList, field: string, annotations: { [key: string]: string } | undefined): void {
  const notMap = checkStringMap(annotations);
  errors.check(field, notMap);
  if (notMap !== undefined) return;
  for (const key of Object.keys(annotations ?? {})) errors.check(`${field}["${key}"]`, checkQualifiedName(key));
}
