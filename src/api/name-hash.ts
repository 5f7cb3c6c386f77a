/**
 * The name hash upstream uses everywhere a name must become a label value:
 * 32-bit FNV-1a over the UTF-8 bytes of the name, as exactly 8 lowercase hex digits.
 *
 * It keys the Pod/Service/PVC `sandbox-name-hash` label, the pool membership label
 * and the template NetworkPolicy selector, so it must match Go's `hash/fnv.New32a`
 * bit for bit.
 */
export class NameHash {
  /**
   * Hash a name (a Sandbox, SandboxWarmPool or SandboxTemplate name).
   *
   * @param name the object name, hashed as UTF-8 bytes
   * @returns 8 lowercase hex digits, zero-padded
   */
  public static of(name: string): string {
    /* eslint-disable no-bitwise -- FNV-1a is defined in terms of XOR and 32-bit unsigned multiply */
    let hash = FNV32_OFFSET_BASIS;
    for (const byte of Buffer.from(name, 'utf8')) {
      hash ^= byte;
      // Math.imul keeps the multiply in 32 bits; >>> 0 makes it unsigned again.
      hash = Math.imul(hash, FNV32_PRIME) >>> 0;
    }
    /* eslint-enable no-bitwise */
    return hash.toString(16).padStart(8, '0');
  }

  private constructor() {}
}

const FNV32_OFFSET_BASIS = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;
