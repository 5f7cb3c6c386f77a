/**
 * The record `cli up` leaves behind so that `cli down` (another process) can stop exactly
 * the processes it started, and integration tests can reuse the running cluster.
 */
import * as fs from 'fs';
import * as path from 'path';
import { cacheRoot } from './binaries';
import { ProcessRecord } from './processes';

export interface ClusterState {
  readonly workDir: string;
  readonly kubeconfig: string;
  readonly server: string;
  readonly binDir: string;
  /** hack/build-real-node.sh's output, with real nodes. */
  readonly nodeBinDir?: string;
  /** The real node's images (name → reference). */
  readonly images?: Record<string, string>;
  readonly startedAt: string;
  readonly processes: ProcessRecord[];
}

export function stateFile(): string {
  return path.join(cacheRoot(), 'cluster.json');
}

export function readState(): ClusterState | undefined {
  try {
    return JSON.parse(fs.readFileSync(stateFile(), 'utf8'));
  } catch {
    return undefined;
  }
}

export function writeState(state: ClusterState): void {
  fs.mkdirSync(cacheRoot(), { recursive: true });
  fs.writeFileSync(stateFile(), JSON.stringify(state, null, 2) + '\n');
}

export function removeState(): void {
  fs.rmSync(stateFile(), { force: true });
}
