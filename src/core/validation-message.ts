/** The one shape of every option validation message: `worker.prefetch must be an integer >= 1 (got 0)`. */
export function validationMessage(path: string, rule: string, value: unknown): string {
  return `${path} ${rule} (got ${shownValue(value)})`;
}

/**
 * A value as the message shows it: a string quoted, JSON otherwise, except where JSON says `null` for what is
 * not null (NaN, Infinity, an invalid Date) or cannot say it at all (a function, a cycle).
 */
function shownValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (value instanceof Date && Number.isNaN(value.getTime())) return 'Invalid Date';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
