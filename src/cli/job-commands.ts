import type { WarrenOps } from '../ops';
import { CliError } from './cli-error';

/** The options `warren job reschedule` reads (parsed by main with the others). */
export interface JobControlValues {
  readonly 'run-at'?: string;
  readonly delay?: string;
}

interface JobContext {
  readonly ops: WarrenOps;
  readonly args: readonly string[];
  readonly values: JobControlValues;
}

interface Result {
  readonly json: unknown;
  readonly text: string;
  readonly exitCode: number;
}

/** The sub-commands of `warren job` that act on a delayed job (docs/guide/job-control.md). */
export const JOB_ACTIONS: ReadonlySet<string> = new Set(['cancel', 'promote', 'reschedule']);

function jobId(args: readonly string[]): string {
  const id = args[0];
  if (id === undefined) throw new CliError('missing <id>');
  return id;
}

const done = (id: string, action: string, detail = ''): Result => ({
  json: { jobId: id, action },
  text: `job ${id}: ${action}${detail}`,
  exitCode: 0,
});

export const JOB_COMMANDS: Readonly<Record<string, (ctx: JobContext) => Promise<Result>>> = {
  async 'job cancel'({ ops, args }) {
    const id = jobId(args);
    const { cancelledAt, dueAt } = await ops.delayed.cancel(id);
    const detail =
      dueAt === undefined
        ? ' (it never runs; its message is dropped when it comes due)'
        : dueAt <= cancelledAt
          ? ` (it came due at ${dueAt.toISOString()}: only a later retry of it is dropped)`
          : ` (it would have run at ${dueAt.toISOString()}; its message stays in the delay levels until then)`;
    return {
      json: {
        jobId: id,
        action: 'cancel',
        cancelledAt: cancelledAt.toISOString(),
        ...(dueAt ? { dueAt: dueAt.toISOString() } : {}),
      },
      text: `job ${id}: cancel${detail}`,
      exitCode: 0,
    };
  },

  async 'job promote'({ ops, args }) {
    const id = jobId(args);
    await ops.delayed.promote(id);
    return done(id, 'promote', ' (runs now)');
  },

  async 'job reschedule'({ ops, args, values }) {
    const id = jobId(args);
    if ((values['run-at'] === undefined) === (values.delay === undefined))
      throw new CliError('job reschedule needs --run-at <date> or --delay <ms>, not both');
    if (values['run-at'] !== undefined) {
      const runAt = new Date(values['run-at']);
      if (Number.isNaN(runAt.getTime()))
        throw new CliError(`--run-at is not a date (got ${values['run-at']})`);
      await ops.delayed.reschedule(id, { runAt });
      return done(id, 'reschedule', ` to ${runAt.toISOString()}`);
    }
    const delayMs = Number(values.delay);
    if (!Number.isInteger(delayMs) || delayMs < 0)
      throw new CliError(`--delay must be an integer >= 0 (got ${values.delay})`);
    await ops.delayed.reschedule(id, { delayMs });
    return done(id, 'reschedule', ` to ${new Date(Date.now() + delayMs).toISOString()}`);
  },
};
