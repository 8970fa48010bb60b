import { terminalCell } from './terminal-text';

/**
 * Left-aligned columns separated by two spaces, a header row first: what people read in a terminal.
 * Cells are made terminal-safe before they are measured, so that escapes keep the columns aligned.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const safe = rows.map((r) => r.map((c) => terminalCell(c ?? '')));
  const widths = header.map((h, i) => Math.max(h.length, ...safe.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...safe.map(line)].join('\n');
}
