import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The repository's root: the nearest folder up from this file (built or not) that holds package.json. */
export function repoRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

/** Every `.ts` file under `dir`, depth first: what the source-reading tests check. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}
