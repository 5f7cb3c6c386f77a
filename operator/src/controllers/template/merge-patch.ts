/**
 * JSON merge patches (RFC 7386), the body of most writes these controllers make: a patch names
 * only what changes, so fields other writers own (status, other labels) are left alone.
 */
import type { MergePatch } from './types';

/**
 * The merge patch that turns the string map `current` into `desired`: changed and new keys with
 * their value, removed keys as null. Undefined when nothing changes, so callers can skip the write.
 */
export function mapPatch(
  current: Readonly<Record<string, string>> | undefined,
  desired: Readonly<Record<string, string>>,
): Record<string, string | null> | undefined {
  const patch: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(desired)) {
    if (current?.[key] !== value) patch[key] = value;
  }
  for (const key of Object.keys(current ?? {})) {
    if (!(key in desired)) patch[key] = null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `target` with `patch` applied as the API server applies a JSON merge patch. Inputs are not modified. */
export function applyMergePatch<T>(target: T, patch: unknown): T {
  if (!isObject(patch)) return structuredClone(patch) as T;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out as T;
}

/** Whether a merge patch changes nothing (an empty object). */
export function isEmptyPatch(patch: MergePatch | undefined): boolean {
  return patch === undefined || Object.keys(patch).length === 0;
}
