/**
 * The router's own refusals, said in gRPC: a request whose content-type is application/grpc* gets a
 * trailers-only response (HTTP 200, `grpc-status`, `grpc-message`) instead of a JSON body, so gRPC
 * clients see a status code they act on (UNAVAILABLE is retried, NOT_FOUND is not). The message is
 * the same text the JSON `detail` carries, percent-encoded as the gRPC HTTP/2 protocol asks.
 */
import type * as http2 from 'node:http2';

/** gRPC status codes the router answers with. */
export const GrpcCode = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** The gRPC code for one of the router's HTTP statuses. */
export function grpcCodeOf(httpStatus: number): number {
  switch (httpStatus) {
    case 400: return GrpcCode.INVALID_ARGUMENT;
    case 401: return GrpcCode.UNAUTHENTICATED;
    case 403: return GrpcCode.PERMISSION_DENIED;
    case 404: return GrpcCode.NOT_FOUND;
    // A suspended sandbox: it will not serve until resumed.
    case 409: return GrpcCode.FAILED_PRECONDITION;
    case 429: return GrpcCode.RESOURCE_EXHAUSTED;
    case 504: return GrpcCode.DEADLINE_EXCEEDED;
    case 502:
    case 503: return GrpcCode.UNAVAILABLE;
    default: return GrpcCode.INTERNAL;
  }
}

/** Percent-encodes what gRPC's `grpc-message` may not carry raw: bytes outside 0x20-0x7E, and `%`. */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function isGrpcRequest(headers: http2.IncomingHttpHeaders): boolean {
  return /^application\/grpc([+;]|$)/i.test(String(headers['content-type'] ?? ''));
}

/** The headers of a trailers-only gRPC response carrying `httpStatus`'s code and `detail`. */
export function trailersOnly(httpStatus: number, detail: string, extra: Record<string, string> = {}): http2.OutgoingHttpHeaders {
  return {
    ...extra,
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': String(grpcCodeOf(httpStatus)),
    'grpc-message': encodeGrpcMessage(detail),
  };
}
