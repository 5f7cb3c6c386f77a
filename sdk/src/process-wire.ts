/**
 * gRPC's 5-byte length-prefixed framing of the `process.v1.ProcessService` messages the SDK sends and
 * reads (the messages themselves: ./process-proto), written by hand so the SDK needs no gRPC library.
 */

/** gRPC's length-prefixed message framing (uncompressed). */
export function frame(message: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** Splits a stream of gRPC frames into messages, across chunk boundaries. */
export class FrameReader {
  private buffered = Buffer.alloc(0);

  public push(chunk: Buffer): Buffer[] {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    const messages: Buffer[] = [];
    while (this.buffered.length >= 5) {
      if (this.buffered[0] !== 0) throw new Error('compressed gRPC messages are not supported');
      const length = this.buffered.readUInt32BE(1);
      if (this.buffered.length < 5 + length) break;
      messages.push(this.buffered.subarray(5, 5 + length));
      this.buffered = this.buffered.subarray(5 + length);
    }
    return messages;
  }
}
