import { App } from 'cdk8s';
import { build as cdk8sPlus } from './cdk8s-plus/main';
import { build as gitops } from './gitops/main';
import { build as hardenedGvisor } from './hardened-gvisor/main';
import { build as hpaPool } from './hpa-pool/main';
import { build as localAgent } from './local-agent/main';
import { build as quickstart } from './quickstart/main';
import { build as routerNamespace } from './router-namespace/main';

/** Every example app, by the folder it lives in (and the dist/examples/ folder it synthesizes to). */
export const EXAMPLES: { [name: string]: (app: App) => void } = {
  'quickstart': quickstart,
  'hardened-gvisor': hardenedGvisor,
  'gitops': gitops,
  'hpa-pool': hpaPool,
  'router-namespace': routerNamespace,
  'local-agent': localAgent,
  'cdk8s-plus': cdk8sPlus,
};
