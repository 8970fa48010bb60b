/**
 * A visitor that throws on a record (a forged or malformed one it did not expect) skips that record:
 * thrown inside amqplib's delivery callback it would close the channel and leave the read waiting
 * forever. Visitors check their records and count what they skip; this is the last line.
 */
export function visitSafely<T, R>(visit: (record: T) => R, record: T): R | undefined {
  try {
    return visit(record);
  } catch {
    return undefined;
  }
}
