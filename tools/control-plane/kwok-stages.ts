/**
 * Builds the stage configuration for the bare `kwok` controller. Bare kwok refuses to start
 * without stages ("no stages found"), so we compose the same "fast" set kwokctl uses, read
 * from kwok's own module directory (never copied into this repo), and optionally give
 * pod-ready a fixed delay so benchmarks see a realistic, identical "container start" time.
 * Pods labelled for the pod runner (pod-runner.ts) are kept out of every pod stage: the runner
 * alone sets their status and finishes their deletion.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Document, parseAllDocuments } from 'yaml';
import { RUN_LABEL } from './pod-runner';

/** Stage files relative to `<kwok module>/kustomize/stage`. */
export const STAGE_FILES = [
  'node/fast/node-initialize.yaml',
  'node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'pod/fast/pod-ready.yaml',
  'pod/fast/pod-complete.yaml',
  'pod/fast/pod-delete.yaml',
];

export function composeStages(kwokModuleDir: string, podReadyDelayMs: number): string {
  // Documents are edited in place (not re-serialized from plain objects) so the Go templates
  // in statusTemplate keep their original block-literal formatting.
  const stages: Document[] = [];
  for (const rel of STAGE_FILES) {
    const file = path.join(kwokModuleDir, 'kustomize', 'stage', rel);
    if (!fs.existsSync(file)) throw new Error(`kwok stage file missing: ${file}`);
    for (const doc of parseAllDocuments(fs.readFileSync(file, 'utf8'))) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
      if (doc.get('kind') === 'Stage') stages.push(doc as Document);
    }
  }
  for (const stage of stages.filter((d) => d.getIn(['spec', 'resourceRef', 'kind']) === 'Pod')) {
    const expressions = stage.getIn(['spec', 'selector', 'matchExpressions']) as { add(v: unknown): void } | undefined;
    if (!expressions) throw new Error(`kwok stage ${stage.getIn(['metadata', 'name'])} has no selector.matchExpressions to extend`);
    expressions.add(stage.createNode({ key: `.metadata.labels["${RUN_LABEL}"]`, operator: 'DoesNotExist' }));
  }
  const podReady = stages.find((d) => d.getIn(['metadata', 'name']) === 'pod-ready');
  if (!podReady) throw new Error(`no pod-ready stage in ${STAGE_FILES.join(', ')}`);
  if (podReadyDelayMs > 0) {
    // Without jitterDurationMilliseconds kwok uses exactly this delay (lifecycle.Stage.Delay).
    podReady.setIn(['spec', 'delay'], podReady.createNode({ durationMilliseconds: Math.round(podReadyDelayMs) }));
  }
  return stages.map((d) => d.toString()).join('---\n');
}
