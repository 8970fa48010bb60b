/**
 * Text fit for a terminal. A job name, an error, a host name in a process's reply: anyone who can
 * publish to the broker chooses them, and raw they could retitle the terminal, move the cursor, overwrite
 * lines (ESC, CSI in C1) or reorder what is read (bidirectional overrides). Every such character is shown
 * as an escape instead: C0 controls (tab and newline too in a table cell), DEL, C1 controls, and the
 * bidirectional marks, embeddings, overrides and isolates.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_IN_CELL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_IN_LINES = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** What JSON.stringify leaves raw (it escapes C0 itself; its own newlines between tokens must stay). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function escaped(c: string): string {
  const code = c.charCodeAt(0);
  if (c === '\n') return '\\n';
  if (c === '\t') return '\\t';
  if (c === '\r') return '\\r';
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** One table cell or one-line value: every control character escaped, newlines and tabs too. */
export function terminalCell(text: string): string {
  return text.replace(UNSAFE_IN_CELL, escaped);
}

/** Lines for a terminal: newlines kept, every other control character escaped. */
export function terminalLines(text: string): string {
  return text.replace(UNSAFE_IN_LINES, escaped);
}

/**
 * JSON for a terminal or a script: the same value (JSON.stringify already escapes C0), with DEL, C1 and
 * the bidirectional characters written as `\u` escapes too, which every JSON parser reads back unchanged.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
