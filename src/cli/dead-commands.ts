import type { IndexedLetter, LetterFilter, LetterState, LoggedLetter, WarrenOps } from '../ops';
import { CliError } from './cli-error';
import { confirm } from './confirm';
import { formatTable } from './table';

/** The options `warren dead ...` reads (parsed by main with the others). */
export interface DeadValues {
  readonly 'job-id'?: string;
  readonly name?: string;
  readonly queue?: string;
  readonly reason?: string;
  readonly 'error-class'?: string;
  readonly error?: string;
  readonly since?: string;
  readonly until?: string;
  readonly field?: string;
  readonly state?: string;
  readonly offset?: string[];
  readonly from?: string;
  readonly limit?: string;
  readonly 'dry-run'?: boolean;
  readonly rate?: string;
  readonly to?: string;
}

export interface DeadContext {
  readonly ops: WarrenOps;
  readonly args: readonly string[];
  readonly yes: boolean;
  readonly values: DeadValues;
}

interface Result {
  readonly json: unknown;
  readonly text: string;
  readonly exitCode: number;
}

const ok = (json: unknown, text: string): Result => ({ json, text, exitCode: 0 });

function whole(name: string, value: string | undefined, min = 0): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new CliError(`--${name} must be a whole number >= ${min} (got ${value})`);
  return n;
}

function date(name: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime()))
    throw new CliError(`--${name} must be a date, e.g. 2026-11-30T10:00Z (got ${value})`);
  return d;
}

const STATES: readonly LetterState[] = ['dead', 'replayed', 'purged'];

/** The filter the search, replay and purge options describe; `{}` selects every letter. */
export function filterOf(v: DeadValues): LetterFilter {
  let field: LetterFilter['field'];
  if (v.field !== undefined) {
    const at = v.field.indexOf('=');
    if (at < 1) throw new CliError(`--field must be path=value, e.g. customer.id=42 (got ${v.field})`);
    field = { path: v.field.slice(0, at), equals: v.field.slice(at + 1) };
  }
  if (v.state !== undefined && !STATES.includes(v.state as LetterState))
    throw new CliError(`--state must be one of ${STATES.join(', ')} (got ${v.state})`);
  const since = date('since', v.since);
  const until = date('until', v.until);
  return {
    ...(v.offset ? { offsets: v.offset.map((o) => whole('offset', o)!) } : {}),
    ...(v['job-id'] !== undefined ? { jobId: v['job-id'] } : {}),
    ...(v.name !== undefined ? { name: v.name } : {}),
    ...(v.queue !== undefined ? { queue: v.queue } : {}),
    ...(v.reason !== undefined ? { reason: v.reason } : {}),
    ...(v['error-class'] !== undefined ? { errorClass: v['error-class'] } : {}),
    ...(v.error !== undefined ? { error: v.error } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    ...(field ? { field } : {}),
    ...(v.state !== undefined ? { state: v.state as LetterState } : {}),
  };
}

function table(letters: readonly (LoggedLetter | IndexedLetter)[]): string {
  if (letters.length === 0) return 'no dead letters';
  const rows = letters.map((l) => [
    String(l.offset),
    new Date(l.deadAt).toISOString(),
    l.queue,
    l.name ?? '?',
    l.jobId ?? '?',
    'state' in l ? l.state : '',
    l.reason,
    (l.error ?? '').slice(0, 60),
  ]);
  return formatTable(['OFFSET', 'DIED', 'QUEUE', 'JOB', 'ID', 'STATE', 'REASON', 'ERROR'], rows);
}

function describeFilter(filter: LetterFilter): string {
  const parts = Object.entries(filter).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return parts.length ? parts.join(' ') : 'every dead letter';
}

export const DEAD_COMMANDS: Readonly<Record<string, (ctx: DeadContext) => Promise<Result>>> = {
  async 'dead ls'({ ops, values }) {
    const limit = whole('limit', values.limit, 1) ?? 50;
    const from = whole('from', values.from);
    const page = from === undefined ? await ops.dead.tail(limit) : await ops.dead.page(from, limit);
    const more = page.next === undefined ? '' : `\nnext page: --from ${page.next}`;
    return ok(page, `${table(page.letters)}${from === undefined ? '' : more}`);
  },

  async 'dead show'({ ops, args }) {
    const offset = whole('offset', args[0]);
    if (offset === undefined) throw new CliError('missing <offset>');
    const letter = await ops.dead.show(offset);
    if (!letter)
      throw new CliError(`no dead letter at offset ${offset} (expired, or not a letter)`, 'CLI_NOT_FOUND');
    return ok(letter, JSON.stringify(letter, null, 2));
  },

  async 'dead search'({ ops, values }) {
    const letters = await ops.dead.search(filterOf(values), whole('limit', values.limit, 1) ?? 50);
    return ok(letters, table(letters));
  },

  async 'dead stats'({ ops }) {
    const s = await ops.dead.stats();
    const text = [
      `log ${s.stream}: ${s.letters} letters (dead ${s.byState.dead}, replayed ${s.byState.replayed}, purged ${s.byState.purged})`,
      s.expiredBefore > 0
        ? `expired up to offset ${s.expiredBefore - 1}; kept since ${s.keptSince?.toISOString() ?? '-'}`
        : 'nothing expired',
      `${s.parked} letter(s) waiting in parking queues (warren dead collect moves them)`,
    ].join('\n');
    return ok(s, text);
  },

  async 'dead collect'({ ops }) {
    const moved = await ops.dead.collect();
    return ok({ moved }, `moved ${moved} dead letter(s) from the parking queues into the log`);
  },

  async 'dead replay'({ ops, values, yes }) {
    const filter = filterOf(values);
    const rate = whole('rate', values.rate);
    const options = {
      ...(rate !== undefined ? { ratePerSecond: rate } : {}),
      ...(values.to !== undefined ? { to: values.to } : {}),
      ...(values.limit !== undefined ? { limit: whole('limit', values.limit, 1)! } : {}),
    };
    const dry = await ops.dead.replay(filter, { ...options, dryRun: true });
    if (values['dry-run'] || dry.selected === 0)
      return ok(dry, `would replay ${dry.selected} dead letter(s) (${describeFilter(filter)})`);
    await confirm(`Replay ${dry.selected} dead letter(s) (${describeFilter(filter)})?`, yes, 'replay');
    const result = await ops.dead.replay(filter, options);
    const failed = result.failed ? `; ${result.failed} not confirmed (still dead, replay again)` : '';
    return {
      json: result,
      text: `replayed ${result.replayed} of ${result.selected}${failed}`,
      exitCode: result.failed ? 1 : 0,
    };
  },

  async 'dead purge'({ ops, values, yes }) {
    const filter = filterOf(values);
    const dry = await ops.dead.purge(filter, { dryRun: true });
    if (values['dry-run'] || dry.selected === 0)
      return ok(dry, `would purge ${dry.selected} dead letter(s) (${describeFilter(filter)})`);
    await confirm(`Mark ${dry.selected} dead letter(s) purged (${describeFilter(filter)})?`, yes, 'purge');
    const result = await ops.dead.purge(filter);
    return ok(result, `purged ${result.purged} dead letter(s)`);
  },
};
