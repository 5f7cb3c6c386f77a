import { staticMethodName } from '../api/spelling';
import { ErrorList, checkLabelValue, checkQualifiedName, checkStringMap } from '../api/validation';

/** Label keys and values as the API server validates them, so a typo fails at synth rather than at apply. */
export function checkLabels(errors: ErrorList, field: string, labels: { [key: string]: string }): void {
  const notMap = checkStringMap(labels);
  if (notMap !== undefined) {
    errors.prop(field, notMap);
    return;
  }
  for (const [key, value] of Object.entries(labels)) {
    errors.prop(field, checkQualifiedName(key));
    errors.prop(`${field}["${key}"]`, checkLabelValue(value));
  }
}

/**
 * Run `check` and throw one error naming the factory (`typeName.method()`, spelled as the caller's
 * language spells it) and every bad argument, so mistakes fail where they are made.
 */
export function validate(typeName: string, method: string, check: (errors: ErrorList) => void): void {
  const errors = new ErrorList();
  check(errors);
  if (errors.all.length > 0) throw new Error(`${staticMethodName(typeName, method)}(): invalid arguments:\n  - ${errors.all.join('\n  - ')}`);
}
