/**
 * JSON merge patches (RFC 7386), the body of most writes the controllers make: a patch names only
 * what changes, so fields other writers own (status, other labels) are left alone.
 */

/** A JSON merge patch of an object: `null` deletes a key, objects merge, everything else (arrays included) replaces. */
export type MergePatch = { [key: string]: MergePatch | string | number | boolean | null | unknown[] };

/** A merge patch of a string map (labels, annotations): null deletes the key. */
export type MapPatch = Record<string, string | null>;

export interface MapPatchOptions {
  /** The keys of `current` this writer manages, deleted when not desired. @default every key of current */
  readonly managed?: (current: Readonly<Record<string, string>>) => readonly string[];
  /** Keys never deleted, even when managed and not desired. */
  readonly keep?: readonly string[];
}

/**
 * The merge patch that turns the string map `current` into `desired` on the keys this writer
 * manages: changed and new keys with their value, managed keys no longer desired as null.
 * Undefined when nothing changes, so callers can skip the write.
 */
export function mapPatch(
  current: Readonly<Record<string, string>> | undefined,
  desired: Readonly<Record<string, string>>,
  options: MapPatchOptions = {},
): MapPatch | undefined {
  const now = current ?? {};
  const patch: MapPatch = {};
  for (const [key, value] of Object.entries(desired)) {
    if (now[key] !== value) patch[key] = value;
  }
  const managed = options.managed ? options.managed(now) : Object.keys(now);
  for (const key of managed) {
    if (!(key in desired) && key in now && !options.keep?.includes(key)) patch[key] = null;
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
