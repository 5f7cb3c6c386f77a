/**
 * The SDK copies its wire names instead of importing the construct library (it must not need it at
 * run time). This test is what keeps each copy equal to the source of truth in src/api.
 */
import { ClaimReadyReason, ConditionType, TERMINAL_CLAIM_REASONS as API_TERMINAL, SandboxReadyReason } from '../../src/api/conditions';
import { OperatingMode as ApiOperatingMode } from '../../src/api/enums';
import { EXTENSIONS_GROUP as API_EXT, CORE_GROUP as API_CORE, API_VERSION_NAME, KINDS } from '../../src/api/groups';
import { DEFAULT_SYSTEM_NAMESPACE, RESERVED_PREFIXES as API_RESERVED, SandboxAnnotations, SandboxLabels } from '../../src/api/labels';
import * as wire from '../src/wire';

describe('wire names copied from src/api', () => {
  test('groups, version and resources', () => {
    expect([wire.CORE_GROUP, wire.EXTENSIONS_GROUP, wire.API_VERSION]).toEqual([API_CORE, API_EXT, API_VERSION_NAME]);
    for (const [copy, kind] of [[wire.CLAIMS, KINDS.claim], [wire.SANDBOXES, KINDS.sandbox], [wire.WARM_POOLS, KINDS.warmPool]] as const) {
      expect({ group: copy.group, plural: copy.plural, kind: copy.kind }).toEqual({ group: kind.group, plural: kind.plural, kind: kind.kind });
    }
  });

  test('labels, annotations and namespaces', () => {
    expect(wire.CREATED_BY_LABEL).toBe(SandboxLabels.CREATED_BY);
    expect(wire.LAUNCH_TYPE_LABEL).toBe(SandboxLabels.LAUNCH_TYPE);
    expect(wire.CLIENT_FIRST_REQUESTED_AT).toBe(SandboxAnnotations.CLIENT_FIRST_REQUESTED_AT);
    expect(wire.RESERVED_PREFIXES).toEqual(API_RESERVED);
    expect(wire.SYSTEM_NAMESPACE).toBe(DEFAULT_SYSTEM_NAMESPACE);
  });

  test('conditions and reasons', () => {
    expect(wire.CONDITION_READY).toBe(ConditionType.READY);
    expect(wire.CONDITION_SUSPENDED).toBe(ConditionType.SUSPENDED);
    expect(wire.ClaimReason).toEqual({
      WARM_POOL_NOT_FOUND: ClaimReadyReason.WARM_POOL_NOT_FOUND,
      TEMPLATE_NOT_FOUND: ClaimReadyReason.TEMPLATE_NOT_FOUND,
      SANDBOX_CREATE_PENDING: ClaimReadyReason.SANDBOX_CREATE_PENDING,
    });
    // The SDK's terminal set is the claim controller's plus the Sandbox reasons a claim mirrors.
    expect(wire.TERMINAL_CLAIM_REASONS).toEqual([
      ...API_TERMINAL, SandboxReadyReason.INVALID_CONFIGURATION, SandboxReadyReason.POD_FAILED, SandboxReadyReason.POD_SUCCEEDED,
    ]);
    expect(wire.OperatingMode).toEqual({ RUNNING: ApiOperatingMode.RUNNING, SUSPENDED: ApiOperatingMode.SUSPENDED });
  });
});
