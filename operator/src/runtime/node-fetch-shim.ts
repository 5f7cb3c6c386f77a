/**
 * Stands in for node-fetch in the operator bundle (esbuild --alias:node-fetch=...). client-node's
 * KubeConfig module imports node-fetch (with whatwg-url and tr46, a third of a megabyte) for its
 * own fetch-based API clients, which the operator never creates: it reads kubeconfigs only and
 * talks to the API server with its own HTTP client. Node 20's built-in fetch and Headers serve
 * if anything ever calls them.
 */
export default globalThis.fetch;
export const Headers = globalThis.Headers;
export class AbortError extends Error {}
export class FetchError extends Error {}
