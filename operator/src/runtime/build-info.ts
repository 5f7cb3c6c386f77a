/**
 * Version information for `--version`, `agent_sandbox_build_info` and the User-Agent. The image
 * sets it through environment variables (Dockerfile build args); a bundle built from a checkout
 * without them reports "dev".
 */
import type { BuildInfo } from './metrics';

export function buildInfo(env: { readonly [name: string]: string | undefined } = process.env): BuildInfo {
  return {
    version: env.AGENT_SANDBOX_VERSION || 'dev',
    gitCommit: env.AGENT_SANDBOX_GIT_COMMIT || 'unknown',
    buildDate: env.AGENT_SANDBOX_BUILD_DATE || 'unknown',
  };
}

export function userAgent(build: BuildInfo): string {
  return `agent-sandbox-operator/${build.version} (${process.platform}/${process.arch}) node/${process.version}`;
}
