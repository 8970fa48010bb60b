/** The one shape of every option validation message: `worker.prefetch must be an integer >= 1 (got 0)`. */
export function validationMessage(path: string, rule: string, value: unknown): string {
  let shown: string;
  try {
    shown = typeof value === 'string' ? `'${value}'` : (JSON.stringify(value) ?? String(value));
  } catch {
    shown = String(value);
  }
  return `${path} ${rule} (got ${shown})`;
}
