#!/usr/bin/env node
// Runs `node --test` on compiled test files (dist/, so build first). Arguments:
//   - a tier name (unit, integration, packaging, faults: scripts/test-tiers.mjs) runs that tier's folder
//     with its timeout and concurrency;
//   - a folder or file runs those files (Node 22 and later no longer search a folder given on the command
//     line, and Node 20 does not expand globs, so the files are listed here);
//   - arguments that start with `--` go to node's test runner and override the tier's
//     (`--test-concurrency=1` runs every file one at a time).
// Integration files listed in SERIAL run after the others, one at a time. WARREN_TEST_CONCURRENCY sets
// how many of the others run at once. The exit status is non-zero when any pass failed; both passes run.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { NEEDS_SERIAL, SERIAL, TIERS } from './test-tiers.mjs';

const root = new URL('..', import.meta.url).pathname;

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

/** `dist/test/integration/x.test.js` → `test/integration/x.test.ts`, the name SERIAL uses. */
function sourceName(file) {
  return relative(join(root, 'dist'), resolve(file)).split(sep).join('/').replace(/\.js$/, '.ts');
}

function fail(message) {
  console.error(`node-test: ${message}`);
  process.exit(1);
}

for (const name of Object.keys(SERIAL))
  if (!existsSync(join(root, name))) fail(`scripts/test-tiers.mjs lists ${name} in SERIAL, which is gone`);

const args = process.argv.slice(2);
const flags = args.filter((arg) => arg.startsWith('--'));
const targets = args.filter((arg) => !arg.startsWith('--'));
const has = (flag) => flags.some((arg) => arg === flag || arg.startsWith(`${flag}=`));

/** The tier a folder or file belongs to (by its folder under dist/test), for its timeout and width. */
function tierOf(path) {
  const folder = relative(join(root, 'dist', 'test'), resolve(path)).split(sep)[0];
  return Object.values(TIERS).find((tier) => tier.folder === folder);
}

// One pass per tier in the order first named (files and folders count as their tier), then the serial pass.
const passes = new Map();
const serial = [];
for (const target of targets) {
  const tier = TIERS[target] ?? tierOf(target);
  const files = testFiles(target in TIERS ? join(root, 'dist', 'test', tier.folder) : target);
  if (files.length === 0) fail(`no *.test.js files under ${target}`);
  const label = Object.keys(TIERS).find((name) => TIERS[name] === tier) ?? 'other';
  if (!passes.has(label))
    passes.set(label, {
      label,
      files: [],
      timeoutMs: tier?.timeoutMs,
      concurrency: tier?.concurrency ?? 1,
      sharesPrivateNodes: tier?.sharesPrivateNodes === true,
    });
  const pass = passes.get(label);
  for (const file of files) {
    if (sourceName(file) in SERIAL) serial.push(file);
    else if (tier?.folder === 'integration' && NEEDS_SERIAL.test(readFileSync(file, 'utf8')))
      fail(
        `${sourceName(file)} calls rabbitmqctl: list it in SERIAL of scripts/test-tiers.mjs, with its reason`,
      );
    else pass.files.push(file);
  }
}
if (targets.length === 0) fail(`name a tier (${Object.keys(TIERS).join(', ')}), a folder or a file`);
const timeouts = [...passes.values()].map((pass) => pass.timeoutMs ?? 0);
passes.set('serial', {
  label: 'serial',
  files: serial,
  timeoutMs: Math.max(...timeouts) || undefined,
  concurrency: 1,
});

function cleanSingleNode() {
  spawnSync('bash', [join(root, 'test', 'support', 'rabbit-node.sh'), 'single', 'clean'], {
    stdio: 'inherit',
  });
}

function run(pass) {
  if (pass.files.length === 0) return 0;
  const width =
    process.env.WARREN_TEST_CONCURRENCY && pass.label !== 'serial'
      ? process.env.WARREN_TEST_CONCURRENCY
      : pass.concurrency;
  // The serial pass stays one file at a time whatever --test-concurrency says.
  const isSerial = pass.label === 'serial';
  const own = isSerial ? flags.filter((arg) => !arg.startsWith('--test-concurrency')) : flags;
  const options = [
    ...(has('--test-concurrency') && !isSerial ? [] : [`--test-concurrency=${width}`]),
    ...(has('--test-timeout') || pass.timeoutMs === undefined ? [] : [`--test-timeout=${pass.timeoutMs}`]),
  ];
  const started = Date.now();
  const env = pass.sharesPrivateNodes ? { ...process.env, WARREN_SHARED_NODES: '1' } : process.env;
  // the standalone node the files share starts fresh (a killed run may have left one up) and goes with
  // its data when they end, however they ended
  if (pass.sharesPrivateNodes) cleanSingleNode();
  const result = spawnSync(process.execPath, ['--test', ...options, ...own, ...pass.files], {
    stdio: 'inherit',
    env,
  });
  if (pass.sharesPrivateNodes) cleanSingleNode();
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`# node-test: ${pass.label}: ${pass.files.length} files, ${options.join(' ')}, ${seconds} s`);
  return result.status ?? 1;
}

const statuses = [...passes.values()].map(run);
process.exit(statuses.find((status) => status !== 0) ?? 0);
