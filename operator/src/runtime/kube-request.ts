/**
 * The pure parts of talking to the API server: resource URLs, patch content types, the
 * DeleteOptions body, and turning an error response into an ApiError.
 */
import { ApiError, DeleteOptions, ListOptions, PatchType, ResourceType, WriteOptions } from './types';

export const PATCH_CONTENT_TYPES: { readonly [type in PatchType]: string } = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/**
 * `/api/v1/namespaces/ns/pods/name/status` or `/apis/group/version/...`. A namespaced type with no
 * namespace addresses all namespaces (list and watch only); a cluster-scoped type ignores it.
 */
export function resourcePath(type: ResourceType, namespace: string | undefined, name?: string, subresource?: string): string {
  if (subresource && !name) throw new Error(`subresource "${subresource}" of ${type.resource} needs an object name`);
  if (name !== undefined && name === '') throw new Error(`empty object name for ${type.resource}`);
  // encodeURIComponent leaves `.` and `..` alone, and a URL resolves them: `sandboxtemplates/..`
  // would address the collection, not an object. No Kubernetes name is either.
  for (const [what, value] of [['namespace', namespace], ['name', name], ['subresource', subresource]] as const) {
    if (value === '.' || value === '..') throw new Error(`"${value}" is not a valid ${what} for ${type.resource}: Kubernetes names cannot be . or ..`);
  }
  const prefix = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const ns = type.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const obj = name === undefined ? '' : `/${encodeURIComponent(name)}`;
  const sub = subresource ? `/${encodeURIComponent(subresource)}` : '';
  return `${prefix}${ns}/${type.resource}${obj}${sub}`;
}

/**
 * The URL of `path` (query included) on the API server `server`. A server URL may have a path of its
 * own (a Rancher or other proxy's `https://rancher.example/k8s/clusters/c-abc`): every request goes
 * under it, as client-go does. `new URL(path, server)` would drop it, since `path` is absolute.
 */
export function serverUrl(server: URL, path: string): URL {
  if (!path.startsWith('/') || path.startsWith('//')) throw new Error(`"${path}" is not a path on the API server (it must start with a single /)`);
  return new URL(`${server.origin}${server.pathname.replace(/\/+$/, '')}${path}`);
}

/** A namespaced object (not a collection) must name its namespace. */
export function requireNamespace(type: ResourceType, namespace: string | undefined, verb: string): void {
  if (type.namespaced && !namespace) {
    throw new Error(`${verb} ${type.resource}: ${type.resource} are namespaced, so a namespace is required`);
  }
}

/** A path plus a query string of the defined values. */
export function withQuery(path: string, query: { readonly [name: string]: string | number | boolean | undefined }): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export function listQuery(options: ListOptions = {}): Record<string, string | number | undefined> {
  return {
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    limit: options.limit,
    continue: options.continue,
    resourceVersion: options.resourceVersion,
  };
}

/** fieldManager/force query parameters; `force` only means something to server-side apply. */
export function writeQuery(options: WriteOptions = {}, patchType?: PatchType): Record<string, string | boolean | undefined> {
  if (patchType === 'apply' && !options.fieldManager) {
    throw new Error('server-side apply needs options.fieldManager (a stable name per controller)');
  }
  if (options.force && patchType !== 'apply') {
    throw new Error(`options.force applies only to server-side apply, not to a ${patchType ?? 'non-patch'} write`);
  }
  return { fieldManager: options.fieldManager, force: options.force || undefined };
}

/** The DeleteOptions body, or undefined when there is nothing to say. */
export function deleteBody(options: DeleteOptions = {}): object | undefined {
  const preconditions = options.uid || options.resourceVersion
    ? { uid: options.uid, resourceVersion: options.resourceVersion }
    : undefined;
  if (!preconditions && !options.propagationPolicy) return undefined;
  return { apiVersion: 'v1', kind: 'DeleteOptions', preconditions, propagationPolicy: options.propagationPolicy };
}

const REASON_BY_CODE: { readonly [code: number]: string } = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * An ApiError from a response status and body. The API server answers errors with a
 * metav1.Status whose `reason` tells NotFound from AlreadyExists (both 404/409 callers branch on);
 * anything else (a proxy's HTML page) still gets a reason from the HTTP code.
 */
export function apiErrorFrom(statusCode: number, bodyText: string, what: string): ApiError {
  let body: any;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = undefined;
  }
  if (body?.kind === 'Status') {
    return new ApiError(statusCode, body.reason || REASON_BY_CODE[statusCode] || 'Unknown', body.message || `${what}: HTTP ${statusCode}`, body);
  }
  const snippet = bodyText.trim().slice(0, 300);
  return new ApiError(statusCode, REASON_BY_CODE[statusCode] ?? 'Unknown', `${what}: HTTP ${statusCode}${snippet ? `: ${snippet}` : ''}`, body ?? bodyText);
}

/** An ApiError from a watch ERROR event's Status object. */
export function apiErrorFromStatus(status: any, what: string): ApiError {
  const code = typeof status?.code === 'number' ? status.code : 500;
  return new ApiError(code, status?.reason || REASON_BY_CODE[code] || 'Unknown', status?.message || `${what}: watch error ${code}`, status);
}
