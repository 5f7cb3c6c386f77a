/** Desired state of a Sandbox (`spec.operatingMode`). */
export enum OperatingMode {
  /** Keep the Pod running (the default). */
  RUNNING = 'Running',
  /** Delete the Pod, keep the Sandbox, its PVCs and Service. */
  SUSPENDED = 'Suspended',
}

/** What happens to a Sandbox at `spec.shutdownTime` (`spec.shutdownPolicy`). */
export enum SandboxShutdownPolicy {
  /** Delete the Sandbox object (its PVCs are garbage-collected). */
  DELETE = 'Delete',
  /** Keep the Sandbox with `Ready=False/SandboxExpired` (the default). */
  RETAIN = 'Retain',
}

/** What happens at a claim's expiry (`spec.lifecycle.shutdownPolicy`). */
export enum ClaimShutdownPolicy {
  /** Delete the claim; its Sandbox is garbage-collected in the background. */
  DELETE = 'Delete',
  /** Delete the claim in the foreground: it stays visible until its Sandbox is gone. */
  DELETE_FOREGROUND = 'DeleteForeground',
  /** Keep the claim with `Ready=False/ClaimExpired`, delete its Sandbox (the default). */
  RETAIN = 'Retain',
}

/** Who owns a template's NetworkPolicy (`spec.networkPolicyManagement`). */
export enum NetworkPolicyManagement {
  /** The operator creates and reconciles `<template>-network-policy` (the default). */
  MANAGED = 'Managed',
  /** The operator leaves NetworkPolicies alone; they come from Git. */
  UNMANAGED = 'Unmanaged',
}

/** Whether a claim may inject environment variables (`spec.envVarsInjectionPolicy`). */
export enum EnvVarsInjectionPolicy {
  /** A claim may add variables the container does not define. */
  ALLOWED = 'Allowed',
  /** A claim may add variables and replace existing ones. */
  OVERRIDES = 'Overrides',
  /** A claim may not set `env` (the default). */
  DISALLOWED = 'Disallowed',
}

/** Whether a claim may add volume claim templates (`spec.volumeClaimTemplatesPolicy`). */
export enum VolumeClaimTemplatesPolicy {
  /** A claim may not set `volumeClaimTemplates` (the default). */
  DISALLOWED = 'Disallowed',
  /** A claim may add templates with new names. */
  ALLOWED = 'Allowed',
  /** A claim may add templates and replace the template's by name. */
  OVERRIDES = 'Overrides',
}

/** How a warm pool replaces stale unclaimed Sandboxes (`spec.updateStrategy.type`). */
export enum WarmPoolUpdateStrategyType {
  /** Delete stale unclaimed Sandboxes at once and create new ones. */
  RECREATE = 'Recreate',
  /** Keep stale Sandboxes claimable; replacements use the current template (the default). */
  ON_REPLENISH = 'OnReplenish',
}

/** The values of a string enum, in declaration order (the order the CRD lists them). */
export function enumValues(e: { [key: string]: string }): string[] {
  return Object.values(e);
}
