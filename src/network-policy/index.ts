export * from './peer';
export * from './port';
// rule.ts also holds the renderer the constructs share; only the rule itself is public.
export type { SandboxNetworkRule } from './rule';
export * from './dns';
// template-network.ts also holds the template's renderer; only its options are public.
export type { SandboxNetworkPolicyOptions } from './template-network';
export * from './sandbox-network-policy';
export * from './default-deny';
export * from './allow-router-ingress';
