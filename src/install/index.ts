export * from './controller-options';
// The other files also hold helpers shared inside the install; only these names are public.
export type { OperatorDeploymentOptions } from './operator-deployment';
export type { SandboxRouterOptions } from './router';
export * from './system';
export * from './extensions';
