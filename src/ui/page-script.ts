import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The dashboard's script, read once when the dashboard loads: `page-script.browser.js` beside this file
 * (the build copies it into dist/src/ui; the published package ships it), plain browser JavaScript that
 * Biome lints and `npm run typecheck` checks against the DOM's types. Served at /app.js as it is.
 */
export const PAGE_SCRIPT = readFileSync(join(__dirname, 'page-script.browser.js'), 'utf8');
