// Loads every entry point warren's package.json exports, the way this folder's module system does
// (`import()` here, `require()` from entries.cjs), and prints each entry's export names.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const manifest = JSON.parse(readFileSync(require.resolve('warren/package.json'), 'utf8'));
const loaded = {};
for (const entry of Object.keys(manifest.exports)) {
  const specifier = entry === '.' ? 'warren' : `warren/${entry.slice(2)}`;
  const module = entry.endsWith('.json')
    ? await import(specifier, { with: { type: 'json' } })
    : await import(specifier);
  loaded[entry] = Object.keys(module)
    .filter((name) => name !== 'default')
    .sort();
}
console.log(JSON.stringify(loaded));
