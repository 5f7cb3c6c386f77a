import { ErrorList, checkLabelValue, checkQualifiedName, checkStringMap } from '../api/validation';

/** Label keys and values as the API server validates them, so a typo fails at synth rather than at apply. */
export function checkLabels(errors: ErrorList, field: string, labels: { [key: string]: string }): void {
  const notMap = checkStringMap(labels);
  if (notMap !== undefined) {
    errors.check(field, notMap);
    return;
  }
  for (const [key, value] of Object.entries(labels)) {
    errors.check(field, checkQualifiedName(key));
    errors.check(`${field}.${key}`, checkLabelValue(value));
  }
}

/** Run `check` and throw one error naming the factory and every bad argument, so mistakes fail where they are made. */
export function validate(where: string, check: (errors: ErrorList) => void): void {
  const errors = new ErrorList();
  check(errors);
  if (errors.all.length > 0) throw new Error(`${where}: invalid arguments:\n  - ${errors.all.join('\n  - ')}`);
}
