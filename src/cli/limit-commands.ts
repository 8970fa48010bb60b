import type { WarrenOps } from '../ops';
import { CliError } from './cli-error';
import { formatTable } from './table';

/** The options `limits set` reads. */
export interface LimitValues {
  readonly concurrency?: string;
  readonly max?: string;
}

interface LimitContext {
  readonly ops: WarrenOps;
  readonly args: readonly string[];
  readonly values: LimitValues;
}

interface Result {
  readonly json: unknown;
  readonly text: string;
  readonly exitCode: number;
}

type Record = Awaited<ReturnType<WarrenOps['limits']['list']>>[number];

const ok = (json: unknown, text: string): Result => ({ json, text, exitCode: 0 });

function arg(args: readonly string[], index: number, name: string): string {
  const value = args[index];
  if (value === undefined) throw new CliError(`missing <${name}>`);
  return value;
}

/** `--max 20` → 20; `--max planned` → null (back to the planned value); absent → unchanged. */
function overrideOf(name: string, text: string | undefined): number | null | undefined {
  if (text === undefined) return undefined;
  if (text === 'planned') return null;
  const value = Number(text);
  if (!Number.isInteger(value)) throw new CliError(`--${name} must be an integer or 'planned' (got ${text})`);
  return value;
}

function rows(records: readonly Record[]): string {
  if (records.length === 0) return 'no per-key limit overrides';
  return formatTable(
    ['target', 'key', 'concurrency', 'max', 'set at'],
    records.map((r) => [
      r.target,
      r.key,
      r.concurrency === undefined ? 'planned' : String(r.concurrency),
      r.max === undefined ? 'planned' : String(r.max),
      new Date(r.at).toISOString(),
    ]),
  );
}

/** `warren limits [get|set]`: per-key limit overrides on the limits stream (docs/guide/per-key-limits.md). */
export const LIMIT_COMMANDS: Readonly<globalThis.Record<string, (ctx: LimitContext) => Promise<Result>>> = {
  async limits({ ops }) {
    const records = await ops.limits.list();
    return ok(records, rows(records));
  },

  async 'limits get'({ ops, args }) {
    const record = await ops.limits.get(arg(args, 0, 'target'), arg(args, 1, 'key'));
    return ok(
      record ?? null,
      record === undefined ? 'no override: the planned limits apply' : rows([record]),
    );
  },

  async 'limits set'({ ops, args, values }) {
    // the positionals first: `limits set job --max 3` lacks its key, whatever its options say
    const target = arg(args, 0, 'target');
    const key = arg(args, 1, 'key');
    const concurrency = overrideOf('concurrency', values.concurrency);
    const max = overrideOf('max', values.max);
    if (concurrency === undefined && max === undefined) throw new CliError('give --concurrency and/or --max');
    const record = await ops.limits.set({
      target,
      key,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(max !== undefined ? { max } : {}),
    });
    return ok(record, rows([record]));
  },
};
