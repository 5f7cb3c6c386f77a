import * as fs from 'fs';
import * as path from 'path';
import { OPERATOR_NODE_FLAGS } from '../../bench/controllers';

test('the benchmark runs the operator with the node flags the image ships', () => {
  const dockerfile = fs.readFileSync(path.join(__dirname, '..', '..', 'operator', 'Dockerfile'), 'utf8');
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]) as string[];
  expect(entrypoint[0]).toBe('/nodejs/bin/node');
  expect(entrypoint.slice(1, -1)).toEqual(OPERATOR_NODE_FLAGS);
  expect(entrypoint[entrypoint.length - 1]).toBe('/app/agent-sandbox-operator.mjs');
});
