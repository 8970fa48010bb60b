import type { WarrenOps } from '../ops';
import { CliError } from './cli-error';
import { confirm } from './confirm';

/** The options `schedules add` reads. */
export interface ScheduleValues {
  readonly id?: string;
  readonly tz?: string;
}

interface ScheduleContext {
  readonly ops: WarrenOps;
  readonly args: readonly string[];
  readonly yes: boolean;
  readonly values: ScheduleValues;
}

interface Result {
  readonly json: unknown;
  readonly text: string;
  readonly exitCode: number;
}

const ok = (json: unknown, text: string): Result => ({ json, text, exitCode: 0 });

function arg(args: readonly string[], index: number, name: string): string {
  const value = args[index];
  if (value === undefined) throw new CliError(`missing <${name}>`);
  return value;
}

function parseData(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`<json> is not JSON: ${text}`);
  }
}

/** `warren schedules add|rm|pause|resume|trigger`: the broker's schedule registry (docs/guide/cron.md). */
export const SCHEDULE_COMMANDS: Readonly<Record<string, (ctx: ScheduleContext) => Promise<Result>>> = {
  async 'schedules add'({ ops, args, values }) {
    const job = arg(args, 0, 'job');
    const pattern = arg(args, 1, 'pattern');
    const id = values.id ?? job;
    const added = await ops.addSchedule(job, pattern, parseData(args[2]), {
      id,
      ...(values.tz !== undefined ? { tz: values.tz } : {}),
    });
    const text = `schedule ${id} added: ${job} on '${pattern}'`;
    return ok(
      { id, action: 'upsert', isFired: added.isFired, warning: added.warning },
      added.warning === undefined ? text : `${text}\nwarning: ${added.warning}`,
    );
  },

  async 'schedules rm'({ ops, args, yes }) {
    const id = arg(args, 0, 'id');
    await confirm(`Remove schedule ${id} from every process?`, yes, `remove schedule ${id}`);
    await ops.removeSchedule(id);
    return ok({ id, action: 'remove' }, `schedule ${id} removed`);
  },

  async 'schedules pause'({ ops, args }) {
    const id = arg(args, 0, 'id');
    await ops.pauseSchedule(id);
    return ok({ id, action: 'pause' }, `schedule ${id} paused`);
  },

  async 'schedules resume'({ ops, args }) {
    const id = arg(args, 0, 'id');
    await ops.resumeSchedule(id);
    return ok({ id, action: 'resume' }, `schedule ${id} resumed`);
  },

  async 'schedules trigger'({ ops, args }) {
    const triggered = await ops.triggerSchedule(arg(args, 0, 'id'));
    return ok(triggered, `published ${triggered.job} as ${triggered.jobId}`);
  },
};
