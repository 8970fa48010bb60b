import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** STYLE.md's import table: a folder may import only from the folders listed. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  message: ['core'],
  topology: ['core'],
  connection: ['core'],
  breaker: ['core'],
  decorators: ['core'],
  idempotency: ['core'],
  streams: ['core', 'topology'],
  // The record codec: proofs over warren's own records; its header name comes from message.
  records: ['core', 'message'],
  retry: ['core', 'topology'],
  coordination: ['core', 'message', 'topology', 'connection'],
  publisher: ['core', 'message', 'topology', 'connection'],
  worker: ['core', 'message', 'topology', 'connection', 'retry', 'breaker', 'coordination'],
  // Beyond STYLE.md's core, decorators, coordination, publisher: the schedule registry is a stream on the
  // broker (connection, message, topology's stream assertion, the stream follower), and schedules are
  // checked against the topology plan's jobs.
  scheduler: [
    'core',
    'decorators',
    'coordination',
    'publisher',
    'connection',
    'message',
    'topology',
    'streams',
    'records',
  ],
  'process-control': ['core', 'message', 'topology', 'connection', 'records'],
  'dead-letter-log': ['core', 'message', 'topology', 'connection', 'streams', 'records'],
  history: ['core', 'message', 'streams', 'records'],
  'job-control': ['core', 'message', 'topology', 'connection', 'streams', 'records'],
  outbox: ['core', 'decorators'],
  observability: ['core', 'message'],
  workflow: ['core', 'decorators', 'idempotency'],
  // The composition root: any layer below.
  warren: [
    'core',
    'message',
    'topology',
    'connection',
    'breaker',
    'decorators',
    'idempotency',
    'retry',
    'streams',
    'records',
    'coordination',
    'publisher',
    'worker',
    'scheduler',
    'process-control',
    'dead-letter-log',
    'history',
    'job-control',
    'outbox',
    'observability',
    'workflow',
  ],
  ops: [
    'records',
    'history',
    'job-control',
    'dead-letter-log',
    'core',
    'message',
    'topology',
    'connection',
    'breaker',
    'decorators',
    'idempotency',
    'retry',
    'coordination',
    'publisher',
    'worker',
    'scheduler',
    'process-control',
    'warren',
  ],
  nest: ['index', 'ops', 'ui'],
  testing: ['index'],
  cli: ['index', 'ops', 'ui'],
  ui: ['index', 'ops'],
};

function findRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

const root = findRoot();
const src = join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Top-level unit of a file: its folder under src, or the file name for src/*.ts. */
function unitOf(file: string): string {
  const parts = relative(src, file).split(sep);
  return parts.length === 1 ? parts[0]!.replace(/\.ts$/, '') : parts[0]!;
}

/** The file without comments: an import in a TSDoc example is not an import. */
function code(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

function imports(file: string): { spec: string; target: string }[] {
  const text = code(file);
  const found: { spec: string; target: string }[] = [];
  for (const match of text.matchAll(
    /(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\s+['"]([^'"]+)['"]/g,
  )) {
    const spec = match[1] ?? match[2]!;
    if (spec.startsWith('.')) found.push({ spec, target: resolve(dirname(file), spec) });
    else found.push({ spec, target: spec });
  }
  return found;
}

describe('architecture', () => {
  const files = sourceFiles(src);

  it('imports flow one way, as STYLE.md allows', () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = unitOf(file);
      const allowed = ALLOWED[from];
      if (allowed === undefined) continue; // index.ts: the public entry may import anything
      for (const { spec, target } of imports(file)) {
        if (!spec.startsWith('.')) continue;
        const to = target.startsWith(src + sep) ? unitOf(`${target}.ts`) : 'outside';
        if (to === from) continue;
        if (!allowed.includes(to))
          violations.push(`${relative(root, file)} imports ${spec} (${from} -> ${to})`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('keeps only the public entry at the top of src/, and every folder is a known layer', () => {
    const top = readdirSync(src, { withFileTypes: true });
    assert.deepEqual(
      top.filter((entry) => entry.isFile()).map((entry) => entry.name),
      ['index.ts'],
    );
    const unknown = top
      .filter((entry) => entry.isDirectory() && ALLOWED[entry.name] === undefined)
      .map((entry) => entry.name);
    assert.deepEqual(unknown, [], 'a new folder needs its row in ALLOWED (and in STYLE.md and the README)');
  });

  it('crosses folders only through the folder index', () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = unitOf(file);
      for (const { spec, target } of imports(file)) {
        if (!spec.startsWith('.') || !target.startsWith(src + sep)) continue;
        const rel = relative(src, target).split(sep);
        if (rel.length > 1 && rel[0] !== from && !(rel.length === 2 && rel[1] === 'index'))
          violations.push(`${relative(root, file)} imports ${spec}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('keeps NestJS and pg out of everything but the nest entry point', () => {
    const violations: string[] = [];
    for (const file of files) {
      if (unitOf(file) === 'nest') continue;
      for (const { spec } of imports(file)) {
        const text = code(file);
        const typeOnly = new RegExp(`import\\s+type[^'"]*['"]${spec.replace(/[/.]/g, '\\$&')}['"]`).test(
          text,
        );
        if (spec.startsWith('@nestjs/') || (spec === 'pg' && !typeOnly))
          violations.push(`${relative(root, file)} imports ${spec}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('spells x-arguments in one file of topology and warren header names in one file of message', () => {
    const xArgs: string[] = [];
    const headers: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const rel = relative(src, file);
      if (
        /'x-(queue-type|max-priority|message-ttl|dead-letter-exchange|delivery-limit|single-active-consumer|max-length|overflow|expires)'/.test(
          text,
        ) &&
        rel !== join('topology', 'queue-arguments.ts')
      )
        xArgs.push(rel);
      if (/'warren-[a-z-]+'/.test(text) && rel !== join('message', 'headers.ts')) headers.push(rel);
    }
    assert.deepEqual(xArgs, []);
    assert.deepEqual(headers, []);
  });
});
