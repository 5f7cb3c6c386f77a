/**
 * The process.v1 codec and service table the SDK and the runtime share (sdk/src/process-proto.ts),
 * for these CommonJS tests, to make grpc-js clients of the runtime. The file is an ES module of the
 * SDK's package: TypeScript reads its types as one (the resolution-mode below), and jest loads it
 * with require(), compiled to CommonJS by the transform test/integration/jest.config.js gives sdk/src.
 */
import type * as ProcessProto from '../../../sdk/src/process-proto.js' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const { PROCESS_SERVICE_DEFINITION } = require('../../../sdk/src/process-proto') as typeof ProcessProto;

export type ExecuteRequest = ProcessProto.ExecuteRequest;
export type ExecuteResponse = ProcessProto.ExecuteResponse;
export type StartRequest = ProcessProto.StartRequest;
export type StartResponse = ProcessProto.StartResponse;
