import type { Page } from 'playwright-core';

/**
 * Pixels of a chart's canvas within 40 per channel of a CSS variable's colour (a 2 px line's core, or a
 * 1 px line on a pixel's middle, is drawn in it exactly). In the page, as source text: the tests compile
 * without the DOM's types.
 */
export function pixelsOf(page: Page, testid: string, cssVariable: string): Promise<number> {
  return page.evaluate(`(() => {
    const canvas = document.querySelector('[data-testid=${testid}] canvas');
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(document.documentElement).getPropertyValue('${cssVariable}');
    document.body.appendChild(probe);
    const [r, g, b] = getComputedStyle(probe).color.match(/\\d+/g).map(Number);
    probe.remove();
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < data.length; i += 4)
      if (data[i + 3] > 200 && Math.abs(data[i] - r) < 40 && Math.abs(data[i + 1] - g) < 40 && Math.abs(data[i + 2] - b) < 40)
        count += 1;
    return count;
  })()`);
}
