// The package's entry point: the jsii assembly's types, and nothing the constructs only share among
// themselves. A module that also holds such helpers (validation, rendering to Kubernetes JSON) is
// re-exported by name; the others in full. test/package/exports.test.ts pins what this exports.
export {
  ClaimShutdownPolicy, EnvVarsInjectionPolicy, NetworkPolicyManagement, OperatingMode, SandboxShutdownPolicy,
  VolumeClaimTemplatesPolicy, WarmPoolUpdateStrategyType,
} from './api/enums';
export { SandboxAnnotations, SandboxLabels } from './api/labels';
export * from './api/name-hash';
export { ObjectRef } from './object-ref';
export { ImagePullPolicy, Protocol } from './container';
export type { ContainerPort, ContainerResources, ContainerSecurityOverrides, SandboxContainerProps, VolumeMount } from './container';
export * from './probe';
export { EnvFrom, EnvValue } from './env';
export type { EnvFromOptions, EnvKeyOptions } from './env';
export { NodeSelectorOperator, WhenUnsatisfiable } from './scheduling';
export type { NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, PreferredNodeSelectorTerm, SchedulingAffinity, TopologySpreadConstraint } from './scheduling';
export { SandboxVolume } from './volume';
export type { EmptyDirOptions, VolumeClaimTemplate } from './volume';
export { KataHypervisor, SandboxRuntimeClass } from './runtime-class';
export type { IRuntimeClass, RuntimeClassToleration, SandboxRuntimeClassOptions, SandboxRuntimeClassProps } from './runtime-class';
export * from './crds';
export * from './blueprint';
export * from './sandbox';
export * from './template';
export type { SandboxRuntimeOptions, SandboxRuntimeTokenSecret } from './sandbox-runtime';
export * from './warm-pool';
export * from './claim';
export type { IdlePolicy } from './idle-policy';
export * from './access';
export * from './network-policy';
export * from './flow-control';
export * from './install';
