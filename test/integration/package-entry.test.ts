import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { statSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

const run = promisify(execFile);

function packageRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

describe('the built package', () => {
  const cwd = packageRoot();

  it('is importable from CommonJS by its name, with every entry point', async () => {
    const script =
      "const w = require('warren'); const t = require('warren/testing'); const o = require('warren/ops'); console.log(JSON.stringify([typeof w.createWarren, typeof w.Job, typeof w.defineTopology, typeof w.WarrenError, typeof t.runJob, typeof o.createOps]))";
    const { stdout } = await run(process.execPath, ['-e', script], { cwd });
    assert.deepEqual(JSON.parse(stdout), [
      'function',
      'function',
      'function',
      'function',
      'function',
      'function',
    ]);
  });

  it('is importable from ESM with named imports', async () => {
    const script =
      "import { createWarren, Job, defineTopology, PublishError } from 'warren'; import { WarrenModule } from 'warren/nest'; console.log(JSON.stringify([typeof createWarren, typeof Job, typeof defineTopology, typeof PublishError, typeof WarrenModule]))";
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd });
    assert.deepEqual(JSON.parse(stdout), ['function', 'function', 'function', 'function', 'function']);
  });

  it('ships type declarations for every entry point', () => {
    for (const entry of [
      'dist/src/index.d.ts',
      'dist/src/nest/index.d.ts',
      'dist/src/testing/index.d.ts',
      'dist/src/ops/index.d.ts',
    ]) {
      assert.ok(statSync(join(cwd, entry), { throwIfNoEntry: false }), `${entry} is missing`);
    }
  });
});
