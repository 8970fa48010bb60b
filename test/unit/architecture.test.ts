import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { repoRoot, sourceFiles } from '../support/source-files';

/** STYLE.md's import table: a folder may import only from the folders listed. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  message: ['core'],
  topology: ['core'],
  connection: ['core'],
  breaker: ['core'],
  decorators: ['core'],
  idempotency: ['core'],
  // Stream readers, and the checkpoints they start from (proven by the record codec); what the broker's
  // refusals mean is read in connection (amqp-reply.ts).
  streams: ['core', 'topology', 'connection', 'records'],
  // The record codec: proofs over warren's own records; its header name comes from message.
  records: ['core', 'message'],
  retry: ['core', 'topology'],
  coordination: ['core', 'message', 'topology', 'connection'],
  publisher: ['core', 'message', 'topology', 'connection'],
  worker: ['core', 'message', 'topology', 'connection', 'retry', 'breaker', 'coordination', 'idempotency'],
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
  'limit-overrides': ['core', 'message', 'topology', 'connection', 'streams', 'records'],
  // Live job events: a headers exchange of the plan, the record codec, the history's error summary.
  'job-events': ['core', 'message', 'topology', 'connection', 'records', 'history'],
  // Queue aggregates for the dashboard's graphs: an instrumentation, streams of records of the codec.
  aggregates: ['core', 'message', 'streams', 'records'],
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
    'limit-overrides',
    'job-events',
    'aggregates',
    'outbox',
    'observability',
    'workflow',
  ],
  ops: [
    'aggregates',
    'records',
    'history',
    'job-control',
    'limit-overrides',
    'job-events',
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

const root = repoRoot();
const src = join(root, 'src');

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

/**
 * The source files a file imports, as the compiler reads them: type-only imports, re-exports, side-effect
 * imports and `import()` types included, comments and strings not. A folder import names its index.ts.
 */
function importedSources(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles.flatMap(({ fileName }) => {
    if (!fileName.startsWith('.')) return [];
    const base = resolve(dirname(file), fileName);
    const found = [`${base}.ts`, join(base, 'index.ts')].find((candidate) =>
      statSync(candidate, { throwIfNoEntry: false })?.isFile(),
    );
    return found === undefined ? [] : [found];
  });
}

/**
 * Every import cycle of a graph, one per strongly connected component of more than one file (or a file
 * importing itself), each as a closed path: `a -> b -> a`. Tarjan's algorithm, then a shortest way round.
 */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) components.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return components.map((component) => closedPath(graph, component));
}

/** The shortest path from the component's first file back to itself, inside the component. */
function closedPath(graph: ReadonlyMap<string, readonly string[]>, component: string[]): string[] {
  const start = component[0]!;
  const inside = new Set(component);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const next of graph.get(file) ?? []) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at: string | undefined = file; at !== start && at !== undefined; at = cameFrom.get(at))
          path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, file);
        queue.push(next);
      }
    }
  }
  return [...component, start];
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

  it('has no import cycle between files, type-only imports included', () => {
    const graph = new Map(files.map((file) => [file, importedSources(file)]));
    const cycles = importCycles(graph).map((cycle) => cycle.map((file) => relative(src, file)).join(' -> '));
    assert.deepEqual(cycles, [], 'break each cycle: move what both sides need into a file neither imports');
  });

  it('finds an import cycle, a type-only one or a file importing itself', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    assert.deepEqual(importCycles(graph), [
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['e.ts', 'e.ts'],
    ]);
    const typeOnly = join(src, 'worker', 'outcome-settler.ts');
    assert.ok(importedSources(typeOnly).includes(join(src, 'worker', 'delivery.ts')), 'import type counts');
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
