import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { repoRoot, sourceFiles } from '../../support/source-files';

/**
 * The delivery path hands one Delivery and narrow dependency objects from part to part, never a
 * `(message, queue, settle, job, ...)` tuple: no function, method, constructor or function type in
 * src/worker/ takes more than MAX_PARAMETERS parameters (a `this` parameter is no argument). A wider one
 * belongs in the Delivery or in the part's deps object.
 */
const MAX_PARAMETERS = 4;

const root = repoRoot();

/** Every signature of `text` with more than MAX_PARAMETERS parameters, as `file:line name (n)`. */
function wideSignatures(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node)) {
      const count = node.parameters.filter((parameter) => parameter.name.getText(source) !== 'this').length;
      if (count > MAX_PARAMETERS) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        const name = node.name?.getText(source) ?? ts.SyntaxKind[node.kind];
        found.push(`${file}:${line} ${name} (${count})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the delivery path', () => {
  it(`takes at most ${MAX_PARAMETERS} parameters in every signature of src/worker/`, () => {
    const wide = sourceFiles(join(root, 'src', 'worker')).flatMap((file) =>
      wideSignatures(relative(root, file), readFileSync(file, 'utf8')),
    );
    assert.deepEqual(
      wide,
      [],
      'put what travels with a delivery in the Delivery, what a part needs in its deps',
    );
  });

  it('counts the parameters of functions, methods, constructors and function types, not `this`', () => {
    const text = [
      'function five(a: 1, b: 2, c: 3, d: 4, e: 5) {}',
      'class C { constructor(a: 1, b: 2, c: 3, d: 4, e: 5) {} m(this: C, a: 1, b: 2, c: 3, d: 4) {} }',
      'type F = (a: 1, b: 2, c: 3, d: 4, e: 5) => void;',
      'const ok = (a: 1, b: 2, c: 3, d: 4) => a;',
    ].join('\n');
    assert.deepEqual(wideSignatures('x.ts', text), [
      'x.ts:1 five (5)',
      'x.ts:2 Constructor (5)',
      'x.ts:3 FunctionType (5)',
    ]);
  });
});
