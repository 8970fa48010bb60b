#!/usr/bin/env node
// Runs `node --test` on the compiled test files under the given folders. Node 22 and later no longer
// search a folder given on the command line, and Node 20 does not expand globs, so the files are listed
// here. Arguments that start with `--` go to node's test runner; the others are folders or files.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function testFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const child = join(path, entry.name);
      if (entry.isDirectory()) return testFiles(child);
      return entry.name.endsWith('.test.js') ? [child] : [];
    });
}

const args = process.argv.slice(2);
const flags = args.filter((arg) => arg.startsWith('--'));
const files = args.filter((arg) => !arg.startsWith('--')).flatMap(testFiles);
if (files.length === 0) {
  console.error(`node-test: no *.test.js files under ${args.join(' ')}`);
  process.exit(1);
}
const run = spawnSync(process.execPath, ['--test', ...flags, ...files], { stdio: 'inherit' });
process.exit(run.status ?? 1);
