/**
 * One record of the job-control stream (a contract: README, "Cancel, promote, reschedule"). JSON, short
 * keys like the history's:
 * - `j` job id, `a` action, `t` when it was recorded (ms since epoch);
 * - `u` the new due time of a `reschedule` (ms since epoch);
 * - `c` the copy id of a `promote` or of a `reschedule` done through the stored copy: the delivery
 *   carrying `warren-control-copy: c` runs, any other delivery of the job is dropped;
 * - on `stored` (the copy a `controllable` publish keeps): `q` the destination queue, `b` the body
 *   (base64), `h` the headers and `p` the other AMQP properties;
 * - `mark`: a process appends one (`c` its own id) and reads until it sees it: then it has caught up.
 */
export type ControlAction = 'cancel' | 'reschedule' | 'promote' | 'stored' | 'mark';

export interface ControlRecord {
  readonly j: string;
  readonly a: ControlAction;
  readonly t: number;
  readonly u?: number;
  readonly c?: string;
  readonly q?: string;
  readonly b?: string;
  readonly h?: Record<string, unknown>;
  readonly p?: Record<string, unknown>;
}

const ACTIONS: ReadonlySet<string> = new Set(['cancel', 'reschedule', 'promote', 'stored', 'mark']);

/** Undefined for a record that is not one of ours (the stream is writable by anyone on the vhost). */
export function parseControlRecord(content: Buffer): ControlRecord | undefined {
  try {
    const record = JSON.parse(content.toString('utf8')) as Partial<ControlRecord>;
    if (typeof record.j !== 'string' || typeof record.a !== 'string' || !ACTIONS.has(record.a))
      return undefined;
    if (typeof record.t !== 'number') return undefined;
    if (record.u !== undefined && typeof record.u !== 'number') return undefined;
    if (record.c !== undefined && typeof record.c !== 'string') return undefined;
    return record as ControlRecord;
  } catch {
    return undefined;
  }
}

/** What a worker does with a delayed job that came due: run it, drop it (cancelled), or wait this many ms. */
export type JobVerdict = 'run' | 'drop' | number;

/** A copy's id: the time its record was made, then a random part. */
export function copyId(at: number, random: string): string {
  return `${at}:${random}`;
}

/**
 * The latest decision on a job decides each of its deliveries. A copy newer than the latest record this
 * process has read runs: its record is on its way (the copy is published before its record, so that a
 * failure between the two runs the job twice rather than never).
 */
export function judge(record: ControlRecord | undefined, copy: unknown, now: number): JobVerdict {
  if (typeof copy === 'string') {
    if (record === undefined || record.c === copy) return 'run';
    return Number(copy.split(':')[0]) > record.t ? 'run' : 'drop';
  }
  if (record === undefined) return 'run';
  if (record.a === 'cancel') return 'drop';
  if (record.c !== undefined) return copy === record.c ? 'run' : 'drop';
  if (record.a === 'reschedule' && record.u !== undefined && record.u > now) return record.u - now;
  return 'run';
}
