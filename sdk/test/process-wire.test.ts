/**
 * gRPC's framing as the SDK writes and reads it: frames come out whole however the stream splits
 * them. (The messages inside are the codec shared with the runtime: process-proto.test.ts.)
 */
import * as fc from 'fast-check';
import { FrameReader, frame } from '../src/process-wire';

test('gRPC frames come out whole however the stream splits them', () => {
  const messagesArb = fc.array(fc.uint8Array({ maxLength: 40 }), { minLength: 1, maxLength: 5 });
  fc.assert(fc.property(messagesArb, fc.integer({ min: 1, max: 7 }), (messages, step) => {
    const wire = Buffer.concat(messages.map((m) => frame(Buffer.from(m))));
    const reader = new FrameReader();
    const out: Buffer[] = [];
    for (let at = 0; at < wire.length; at += step) out.push(...reader.push(wire.subarray(at, at + step)));
    expect(out.map((b) => [...b])).toEqual(messages.map((m) => [...m]));
  }));
});
