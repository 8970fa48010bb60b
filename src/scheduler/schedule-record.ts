/**
 * The schedule registry's wire format: one JSON record per stream message,
 * `{ v: 1, id, action, at, job?, pattern?, tz?, data?, missedTicks? }`, where `action` is 'upsert' (with
 * `job` and `pattern`), 'remove', 'pause' or 'resume', and `at` is the writer's clock in ms (shown, never
 * trusted for ordering: the stream's offset orders records). Replaying the stream and keeping, per id, the
 * fold of its records gives the run-time schedules and the paused set. 'sync' records carry no schedule:
 * a process appends one at start and reads up to it to know it has seen everything written before.
 */
import type { MissedTickPolicy } from '../core';

export type ScheduleAction = 'upsert' | 'remove' | 'pause' | 'resume';

const ACTIONS: readonly string[] = ['upsert', 'remove', 'pause', 'resume'];
const POLICIES: readonly string[] = ['skip', 'run-once'];
/** A record larger than this is skipped unparsed (a schedule's data is a job payload: keep it small). */
export const MAX_RECORD_BYTES = 1024 ** 2;
const MAX_ID_CHARS = 500;

/** A run-time schedule's definition as the registry holds it (validated again by every reader). */
export interface ScheduleDefinition {
  readonly job: string;
  readonly pattern: string;
  readonly tz?: string | undefined;
  readonly data?: unknown;
  readonly missedTicks?: MissedTickPolicy | undefined;
}

export type ScheduleRecord =
  | ({
      readonly v: 1;
      readonly id: string;
      readonly action: 'upsert';
      readonly at: number;
    } & ScheduleDefinition)
  | {
      readonly v: 1;
      readonly id: string;
      readonly action: 'remove' | 'pause' | 'resume';
      readonly at: number;
    }
  | { readonly v: 1; readonly action: 'sync'; readonly token: string; readonly at: number };

/** One id's state after replay: its run-time definition (if any) and whether it is paused. */
export interface RegistryEntry {
  readonly definition: ScheduleDefinition | undefined;
  readonly paused: boolean;
}

export function encodeScheduleRecord(record: ScheduleRecord): Buffer {
  return Buffer.from(JSON.stringify(record));
}

/** Parses a record; a string says why it is not one (a foreign or corrupt message: logged, skipped). */
export function decodeScheduleRecord(content: Buffer): ScheduleRecord | string {
  if (content.length > MAX_RECORD_BYTES) return 'too large';
  let value: unknown;
  try {
    value = JSON.parse(content.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null) return 'not an object';
  const r = value as Record<string, unknown>;
  if (r.v !== 1) return `unknown version ${JSON.stringify(r.v)}`;
  if (r.action === 'sync')
    return typeof r.token === 'string' ? (r as unknown as ScheduleRecord) : 'sync without token';
  if (typeof r.id !== 'string' || r.id.length === 0 || r.id.length > MAX_ID_CHARS) return 'no id';
  if (typeof r.at !== 'number') return 'no time';
  if (typeof r.action !== 'string' || !ACTIONS.includes(r.action))
    return `unknown action ${String(r.action)}`;
  if (r.action === 'upsert') {
    if (typeof r.job !== 'string' || typeof r.pattern !== 'string') return 'upsert without job or pattern';
    if (r.job.length > MAX_ID_CHARS || r.pattern.length > MAX_ID_CHARS) return 'job or pattern too long';
    if (r.tz !== undefined && typeof r.tz !== 'string') return 'tz is not a string';
    if (r.missedTicks !== undefined && !POLICIES.includes(r.missedTicks as string))
      return 'unknown missedTicks';
  }
  return r as unknown as ScheduleRecord;
}

/** Records that rebuild `state` when applied in order (a checkpoint's): an upsert, then a pause, per id. */
export function recordsOfState(state: ReadonlyMap<string, RegistryEntry>): ScheduleRecord[] {
  return [...state].flatMap(([id, entry]): ScheduleRecord[] => [
    ...(entry.definition === undefined
      ? []
      : [{ v: 1, id, action: 'upsert', at: 0, ...entry.definition } as const]),
    ...(entry.paused ? [{ v: 1, id, action: 'pause', at: 0 } as const] : []),
  ]);
}

/**
 * Applies one record to the registry state (last record per id wins): 'upsert' sets the definition and
 * makes the schedule active, 'remove' forgets the id (definition and pause), 'pause' and 'resume' set the
 * pause of any id, run-time or declared in code.
 */
export function applyScheduleRecord(state: Map<string, RegistryEntry>, record: ScheduleRecord): void {
  if (record.action === 'sync') return;
  const previous = state.get(record.id);
  switch (record.action) {
    case 'upsert': {
      const { job, pattern, tz, data, missedTicks } = record;
      state.set(record.id, { definition: { job, pattern, tz, data, missedTicks }, paused: false });
      return;
    }
    case 'remove':
      state.delete(record.id);
      return;
    case 'pause':
    case 'resume': {
      const paused = record.action === 'pause';
      if (!paused && previous?.definition === undefined) state.delete(record.id);
      else state.set(record.id, { definition: previous?.definition, paused });
    }
  }
}
