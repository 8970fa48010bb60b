import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { repoRoot, sourceFiles } from '../support/source-files';

/**
 * Small files and short functions keep the code readable. An exception is allowed with a one-line reason:
 * `// size-exception: <why>` on the line above the function, or among the first lines of the file.
 */
const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 60;
const EXCEPTION = /\/\/ size-exception: \S/;

const root = repoRoot();

function longFunctions(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = text.split('\n');
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      const excused = EXCEPTION.test(lines[start - 1] ?? '');
      if (end - start + 1 > MAX_FUNCTION_LINES && !excused) {
        const name = node.name?.getText(source) ?? ts.SyntaxKind[node.kind];
        found.push(`${relative(root, file)}:${start + 1} ${name} has ${end - start + 1} lines`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('size limits', () => {
  const files = sourceFiles(join(root, 'src'));

  it(`keeps every file in src/ under ${MAX_FILE_LINES} lines, or says why`, () => {
    const violations = files.flatMap((file) => {
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const excused = lines.slice(0, 5).some((line) => EXCEPTION.test(line));
      return lines.length > MAX_FILE_LINES && !excused
        ? [`${relative(root, file)} has ${lines.length} lines`]
        : [];
    });
    assert.deepEqual(violations, []);
  });

  it(`keeps every function in src/ under ${MAX_FUNCTION_LINES} lines, or says why`, () => {
    const violations = files.flatMap((file) => longFunctions(file, readFileSync(file, 'utf8')));
    assert.deepEqual(violations, []);
  });
});
