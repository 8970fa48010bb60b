import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The graphs' script and the charting library, served beside the page (no CDN: the dashboard works
 * offline and behind a strict CSP). The library is uPlot (MIT, about 50 kB minified, canvas, made for time
 * series; docs/operating/dashboard.md says why), a dependency of the package at a pinned version, read
 * from its own folder once, on the first request for it.
 */
let assets: { script: string; style: string; graphs: string } | undefined;

export function chartAssets(): { script: string; style: string; graphs: string } {
  if (assets === undefined) {
    const uplot = join(dirname(require.resolve('uplot/package.json')), 'dist');
    assets = {
      script: readFileSync(join(uplot, 'uPlot.iife.min.js'), 'utf8'),
      style: readFileSync(join(uplot, 'uPlot.min.css'), 'utf8'),
      graphs: readFileSync(join(__dirname, 'graphs.browser.js'), 'utf8'),
    };
  }
  return assets;
}
