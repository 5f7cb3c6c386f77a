/**
 * The protobuf binary wire format, by hand: just what sandboxd's few messages need (varints,
 * length-delimited fields, skipping unknown fields of every wire type). A generated codec would
 * pull in protobufjs and a .proto loader for five messages; this file is the whole of it.
 *
 * Integers: int32 values are written as 64-bit sign-extended varints (negative numbers take ten
 * bytes), uint32 as plain varints; when reading, the low 32 bits are kept, as the protobuf
 * runtimes do.
 */
/* eslint-disable no-bitwise -- the wire format is defined in 7-bit groups, tags and two's complement */

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_BYTES = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

export class ProtoDecodeError extends Error {}

/** The low 32 bits of a varint as read, as a signed int32. */
export function toInt32(value: number): number {
  return value | 0;
}

/** Appends fields; `finish()` returns the encoded message. */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  /** A varint of a non-negative integer below 2^53, or of a negative int32 (sign-extended to 64 bits). */
  public varint(value: number): this {
    const bytes: number[] = [];
    if (value < 0) {
      // Two's complement over 64 bits: the low 32 bits, then all ones above.
      let low = value >>> 0;
      for (let i = 0; i < 4; i++) {
        bytes.push((low & 0x7f) | 0x80);
        low >>>= 7;
      }
      bytes.push((low & 0x0f) | 0x70 | 0x80, 0xff, 0xff, 0xff, 0xff, 0x01);
    } else {
      let v = value;
      while (v >= 0x80) {
        bytes.push((v % 0x80) | 0x80);
        v = Math.floor(v / 0x80);
      }
      bytes.push(v);
    }
    this.parts.push(Buffer.from(bytes));
    return this;
  }

  public tag(field: number, wireType: number): this {
    return this.varint(field * 8 + wireType);
  }

  /** An int32 or enum field; proto3 leaves zero out unless `always`. */
  public int32(field: number, value: number, always = false): this {
    if (value === 0 && !always) return this;
    return this.tag(field, WIRE_VARINT).varint(value | 0);
  }

  public uint32(field: number, value: number): this {
    if (value === 0) return this;
    return this.tag(field, WIRE_VARINT).varint(value >>> 0);
  }

  /** A bytes, string or embedded-message field; proto3 leaves an empty one out unless `always`. */
  public bytes(field: number, value: Buffer | Uint8Array, always = false): this {
    if (value.length === 0 && !always) return this;
    this.tag(field, WIRE_BYTES).varint(value.length);
    this.parts.push(Buffer.from(value.buffer, value.byteOffset, value.length));
    return this;
  }

  public string(field: number, value: string, always = false): this {
    return this.bytes(field, Buffer.from(value, 'utf8'), always);
  }

  public finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** One field as read: its number, wire type and value (a number for varints, a slice for bytes). */
export type ProtoField =
  | { readonly field: number; readonly wireType: typeof WIRE_VARINT; readonly value: number }
  | { readonly field: number; readonly wireType: typeof WIRE_BYTES; readonly value: Buffer };

/** Reads the fields of one message in order; fields of the other wire types are skipped. */
export function* readFields(buf: Buffer): Generator<ProtoField> {
  const reader = new Reader(buf);
  while (!reader.done) {
    const key = reader.varint32();
    const field = key >>> 3;
    const wireType = key & 7;
    if (field === 0) throw new ProtoDecodeError('field number 0 is invalid');
    if (wireType === WIRE_VARINT) yield { field, wireType, value: reader.varint32() };
    else if (wireType === WIRE_BYTES) yield { field, wireType, value: reader.lengthDelimited() };
    else reader.skip(wireType, field);
  }
}

class Reader {
  private pos = 0;

  public constructor(private readonly buf: Buffer) {}

  public get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** A varint of up to ten bytes; the low 32 bits (as an unsigned number). */
  public varint32(): number {
    let result = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new ProtoDecodeError('truncated varint');
      const b = this.buf[this.pos++];
      if (i < 5) result = (result | ((b & 0x7f) << (7 * i))) >>> 0;
      if ((b & 0x80) === 0) return result;
    }
    throw new ProtoDecodeError('varint longer than ten bytes');
  }

  /** A length, which must be a varint below 2^31 that fits in what is left. */
  public lengthDelimited(): Buffer {
    const start = this.pos;
    const length = this.varint32();
    if (length > 0x7fffffff || this.pos - start > 5) throw new ProtoDecodeError('length out of range');
    if (length > this.buf.length - this.pos) throw new ProtoDecodeError('length beyond the end of the message');
    const value = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return value;
  }

  private advance(n: number): void {
    if (n > this.buf.length - this.pos) throw new ProtoDecodeError('truncated fixed-width field');
    this.pos += n;
  }

  /** Skips one value of `wireType` (a whole group, up to its end tag, for a start-group). */
  public skip(wireType: number, field: number): void {
    switch (wireType) {
      case WIRE_VARINT: this.varint32(); return;
      case WIRE_FIXED64: this.advance(8); return;
      case WIRE_BYTES: this.lengthDelimited(); return;
      case WIRE_FIXED32: this.advance(4); return;
      case WIRE_START_GROUP:
        for (;;) {
          if (this.done) throw new ProtoDecodeError(`group ${field} has no end`);
          const key = this.varint32();
          if ((key & 7) === WIRE_END_GROUP) {
            if (key >>> 3 !== field) throw new ProtoDecodeError(`group ${field} ended by the end tag of ${key >>> 3}`);
            return;
          }
          this.skip(key & 7, key >>> 3);
        }
      default: throw new ProtoDecodeError(`wire type ${wireType} is invalid here`);
    }
  }
}
