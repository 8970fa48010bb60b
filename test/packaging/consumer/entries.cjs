// Loads every entry point warren's package.json exports with require(), and prints each one's export names.
const manifest = require('warren/package.json');

const loaded = {};
for (const entry of Object.keys(manifest.exports)) {
  const specifier = entry === '.' ? 'warren' : `warren/${entry.slice(2)}`;
  loaded[entry] = Object.keys(require(specifier)).sort();
}
console.log(JSON.stringify(loaded));
