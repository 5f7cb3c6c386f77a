import * as fs from 'fs';
import * as path from 'path';
import { IMAGE_NODE_FLAGS } from '../../tools/shared/operator-process';

const ROOT = path.join(__dirname, '..', '..');

test('local runs and the benchmarks run the operator with the node flags the image ships', () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'operator', 'Dockerfile'), 'utf8');
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]) as string[];
  expect(entrypoint[0]).toBe('/nodejs/bin/node');
  expect(entrypoint.slice(1, -1)).toEqual(IMAGE_NODE_FLAGS);
  expect(entrypoint[entrypoint.length - 1]).toBe('/app/agent-sandbox-operator.mjs');
});

test('`npx projen operator` runs the bundle with the same node flags', () => {
  const tasks = JSON.parse(fs.readFileSync(path.join(ROOT, '.projen', 'tasks.json'), 'utf8')) as { tasks: Record<string, { steps?: { exec?: string }[] }> };
  const exec = tasks.tasks.operator.steps?.find((s) => s.exec?.includes('agent-sandbox-operator.mjs'))?.exec;
  expect(exec).toBe(`node --enable-source-maps ${IMAGE_NODE_FLAGS.join(' ')} operator/dist/agent-sandbox-operator.mjs`);
});
