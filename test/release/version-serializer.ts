/**
 * Snapshots hold the operator image with its tag replaced by `<version>`: the tag is this library's
 * version, 0.0.0 in a checkout and the released version in the release build, whose tests must pass
 * against the same committed snapshots.
 */
import { OPERATOR_IMAGE_REPOSITORY } from '../../src/install/operator-deployment';
import { LIBRARY_VERSION } from '../../src/version';

const TAGGED = `${OPERATOR_IMAGE_REPOSITORY}:v${LIBRARY_VERSION}`;
const PLACEHOLDER = `${OPERATOR_IMAGE_REPOSITORY}:v<version>`;

export function test(value: unknown): boolean {
  return typeof value === 'string' && value.includes(TAGGED);
}

type Printer = (value: unknown, config: unknown, indentation: string, depth: number, refs: unknown) => string;

export function serialize(value: string, config: unknown, indentation: string, depth: number, refs: unknown, printer: Printer): string {
  return printer(value.split(TAGGED).join(PLACEHOLDER), config, indentation, depth, refs);
}
