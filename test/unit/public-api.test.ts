import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/**
 * The public surface, name by name: every export (values and types) of every package entry in
 * package.json `exports`, compared with the checked-in test/unit/public-api.txt. A change to what users
 * can import is then always a visible diff of that file. Regenerate it with WARREN_UPDATE_API=1.
 */

function findRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

const root = findRoot();
const listFile = join(root, 'test', 'unit', 'public-api.txt');

/** Each subpath of package.json `exports` with its source entry (`./dist/src/x/index.d.ts` -> `src/x/index.ts`). */
function entries(): { subpath: string; file: string }[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types?: string }>;
  };
  return Object.entries(pkg.exports).flatMap(([subpath, target]) => {
    const types = typeof target === 'string' ? undefined : target.types;
    if (types === undefined || !types.endsWith('.d.ts')) return [];
    const source = types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts');
    return [{ subpath, file: join(root, source) }];
  });
}

/** What an export is: a value users can call or construct, or only a type (an `export type` of a class is a type). */
function kindOf(checker: ts.TypeChecker, exported: ts.Symbol): string {
  const typeOnly = exported.declarations?.some((d) => ts.isTypeOnlyImportOrExportDeclaration(d)) ?? false;
  const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const f = target.flags;
  const kind =
    f & ts.SymbolFlags.Class
      ? 'class'
      : f & ts.SymbolFlags.Function
        ? 'function'
        : f & ts.SymbolFlags.Enum
          ? 'enum'
          : f & ts.SymbolFlags.Variable
            ? 'const'
            : f & ts.SymbolFlags.Interface
              ? 'interface'
              : f & ts.SymbolFlags.TypeAlias
                ? 'type'
                : f & ts.SymbolFlags.Module
                  ? 'namespace'
                  : 'other';
  const isValue = kind === 'class' || kind === 'function' || kind === 'enum' || kind === 'const';
  return typeOnly && isValue ? `type-of-${kind}` : kind;
}

let computed: string[] | undefined;

/** Computed once: the three tests read the same list. */
function publicApi(): string[] {
  computed ??= computePublicApi();
  return computed;
}

function computePublicApi(): string[] {
  const list = entries();
  const program = ts.createProgram(
    list.map((e) => e.file),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      experimentalDecorators: true,
      esModuleInterop: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
    },
  );
  const checker = program.getTypeChecker();
  const lines: string[] = [];
  for (const { subpath, file } of list) {
    const source = program.getSourceFile(file);
    assert.ok(source, `entry ${subpath} (${file}) is missing`);
    const module = checker.getSymbolAtLocation(source);
    assert.ok(module, `entry ${subpath} (${file}) exports nothing`);
    for (const exported of checker.getExportsOfModule(module))
      lines.push(`${subpath} ${exported.name} ${kindOf(checker, exported)}`);
  }
  return lines.sort();
}

/**
 * Issue 29's budget: a root entry a job author can read in one sitting, and a bounded surface in all (200,
 * plus `warren/errors`'s two classes, PartitionLostError and LimitError: a handler's `ctx.signal.reason` and a
 * refused plan must be reachable by `instanceof`).
 */
const ROOT_LIMIT = 100;
const TOTAL_LIMIT = 202;

describe('public API', () => {
  it(`keeps the root entry to ${ROOT_LIMIT} names and all entries together to ${TOTAL_LIMIT}`, () => {
    const lines = publicApi();
    const root = lines.filter((line) => line.startsWith('. '));
    assert.ok(root.length <= ROOT_LIMIT, `the root entry exports ${root.length} names (limit ${ROOT_LIMIT})`);
    assert.ok(lines.length <= TOTAL_LIMIT, `all entries export ${lines.length} names (limit ${TOTAL_LIMIT})`);
  });

  it('exports each name from one entry only', () => {
    const entriesOf = new Map<string, string[]>();
    for (const line of publicApi()) {
      const [subpath, name] = line.split(' ') as [string, string];
      entriesOf.set(name, [...(entriesOf.get(name) ?? []), subpath]);
    }
    const twice = [...entriesOf]
      .filter(([, subpaths]) => subpaths.length > 1)
      .map(([n, s]) => `${n}: ${s.join(', ')}`);
    assert.deepEqual(twice, [], 'a name is exported from one entry: import it from there');
  });

  it('exports exactly the names listed in test/unit/public-api.txt', () => {
    const actual = publicApi();
    if (process.env.WARREN_UPDATE_API === '1') {
      writeFileSync(listFile, `${actual.join('\n')}\n`);
      return;
    }
    const expected = readFileSync(listFile, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    const added = actual.filter((line) => !expected.includes(line));
    const removed = expected.filter((line) => !actual.includes(line));
    assert.deepEqual(
      { added, removed },
      { added: [], removed: [] },
      'The public API changed. If that is on purpose, regenerate the list and commit the diff: ' +
        'npm run build && WARREN_UPDATE_API=1 node --test dist/test/unit/public-api.test.js',
    );
  });
});
