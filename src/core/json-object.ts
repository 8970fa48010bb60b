/**
 * The JSON object in a record's or a message's bytes, or undefined when they hold anything else: more bytes
 * than `maxBytes`, text that is not JSON, or JSON that is not an object (null, an array, a string, a number).
 * Every reader of untrusted records starts here; what the object's fields must be is the reader's own check.
 */
export function parseJsonObject(
  content: Buffer,
  maxBytes = Number.POSITIVE_INFINITY,
): Record<string, unknown> | undefined {
  if (content.length > maxBytes) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(content.toString('utf8'));
  } catch {
    return undefined;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
