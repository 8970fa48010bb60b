// Deletes what tsc left in dist/ from sources that are gone (a moved or deleted .ts file keeps its old
// .js beside the new one, and Node resolves `require('./warren')` to a stale dist/src/warren.js before
// dist/src/warren/index.js). Run after every build, so tests, benchmarks and `npm pack` see only what
// the sources make.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dist = join(root, 'dist');
const OUTPUT = /(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/;

function prune(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      prune(path);
      if (readdirSync(path).length === 0) rmSync(path, { recursive: true });
      continue;
    }
    const match = OUTPUT.exec(entry.name);
    if (!match) continue;
    const source = join(root, relative(dist, dir), entry.name.slice(0, -match[1].length));
    // A browser script (`*.browser.js`, copied by copy-browser-scripts.mjs) stays while its source does.
    const isCopied = match[1] === '.js' && existsSync(`${source}.js`);
    if (!existsSync(`${source}.ts`) && !existsSync(`${source}.tsx`) && !isCopied) rmSync(path);
  }
}

if (existsSync(dist))
  for (const top of ['src', 'test', 'bench', 'examples']) {
    const dir = join(dist, top);
    if (existsSync(dir)) prune(dir);
  }
