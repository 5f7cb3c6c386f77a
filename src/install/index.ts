export * from './controller-options';
// The other files also hold helpers shared inside the install; only these names are public.
export type { OperatorDeploymentOptions, OperatorDisruptionBudgetOptions } from './operator-deployment';
export type { OperatorServiceMonitorOptions, OperatorPrometheusRuleOptions, OperatorGrafanaDashboardOptions } from './monitoring';
export type { SandboxRouterOptions } from './router';
export type { InstallEnvOptions } from './workload';
export * from './system';
export * from './extensions';
