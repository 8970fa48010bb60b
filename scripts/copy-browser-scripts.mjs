// Copies the browser scripts of src/ (`*.browser.js`: plain JavaScript that tsc does not emit, such as the
// dashboard's page-script.browser.js) to the same place in dist/src, where the server reads them and
// `npm pack` ships them (package.json `files` has dist/src). Runs after every build, after prune-dist.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

function browserScripts(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return browserScripts(path);
    return entry.name.endsWith('.browser.js') ? [path] : [];
  });
}

for (const source of browserScripts(join(root, 'src'))) {
  const target = join(root, 'dist', relative(root, source));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(source, target);
}
