/**
 * What PostgreSQL answers the session that loses a race of two `CREATE TABLE IF NOT EXISTS` (or `CREATE
 * INDEX IF NOT EXISTS`) for the same object: a unique violation on the catalog (23505), the relation
 * (42P07) or its row type (42710) already existing. The object is there, made by the other session.
 */
const LOST_CREATE_RACE = new Set(['23505', '42P07', '42710']);

export function lostCreateRace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && LOST_CREATE_RACE.has(code);
}
