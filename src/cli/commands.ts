import type { PauseResult, ProcessStatus, ScheduleNotFiredReason, ScheduleOverview, WarrenOps } from '../ops';
import { CliError } from './cli-error';
import { confirm } from './confirm';
import { DEAD_COMMANDS, type DeadValues } from './dead-commands';
import { JOB_COMMANDS, type JobControlValues } from './job-commands';
import { NAMESPACE_COMMANDS, type NamespaceValues } from './namespace-commands';
import { SCHEDULE_COMMANDS, type ScheduleValues } from './schedule-commands';
import { LIMIT_COMMANDS, type LimitValues } from './limit-commands';
import { formatTable } from './table';
import { jobText } from './job-text';

/** What a command hands back: the value for --json, the text for people, and the exit code. */
export interface CommandResult {
  readonly json: unknown;
  readonly text: string;
  readonly exitCode: number;
}

export interface CommandContext {
  readonly ops: WarrenOps;
  readonly args: readonly string[];
  readonly yes: boolean;
  readonly values: DeadValues &
    JobControlValues &
    ScheduleValues &
    NamespaceValues &
    MarkValues &
    LimitValues;
}

/** The options `mark deploy` reads. */
export interface MarkValues {
  readonly note?: string;
  readonly release?: string;
}

type Command = (ctx: CommandContext) => Promise<CommandResult>;

const ok = (json: unknown, text: string, exitCode = 0): CommandResult => ({ json, text, exitCode });

function arg(ctx: CommandContext, index: number, name: string): string {
  const value = ctx.args[index];
  if (value === undefined) throw new CliError(`missing <${name}>`);
  return value;
}

function processLabel(p: ProcessStatus): string {
  return `${p.host}:${p.pid}`;
}

function pauseText(verb: string, result: PauseResult): string {
  const lines = [
    `${verb} ${result.queue}: confirmed by ${result.confirmed.length} process(es)` +
      (result.confirmed.length ? ` (${result.confirmed.map(processLabel).join(', ')})` : ''),
  ];
  if (result.unconfirmed.length)
    lines.push(`not confirmed by ${result.unconfirmed.map(processLabel).join(', ')}`);
  if (result.silent) lines.push(`${result.silent} listening process(es) did not answer`);
  return lines.join('\n');
}

const NOT_FIRED_TEXT: Readonly<Record<ScheduleNotFiredReason, string>> = {
  paused: 'paused',
  'no-scheduler': 'no scheduler',
  'not-held': 'leader lacks it',
};

/** One line per reason a schedule does not fire (a pause is the operator's choice: no warning). */
function unfiredWarnings(schedules: readonly ScheduleOverview[]): string[] {
  const ids = (reason: ScheduleNotFiredReason) =>
    schedules.filter((s) => s.notFired === reason).map((s) => s.id);
  const lines: string[] = [];
  const orphans = ids('no-scheduler');
  if (orphans.length)
    lines.push(
      `warning: ${orphans.join(', ')} fire(s) nothing: no process runs the scheduler ` +
        '(start one with a @Cron job or scheduler.enabled: true)',
    );
  const unheld = ids('not-held');
  if (unheld.length)
    lines.push(`warning: ${unheld.join(', ')} fire(s) nothing: the cron leader does not hold it`);
  return lines;
}

export const COMMANDS: Readonly<Record<string, Command>> = {
  ...DEAD_COMMANDS,
  ...JOB_COMMANDS,
  ...SCHEDULE_COMMANDS,
  ...LIMIT_COMMANDS,
  ...NAMESPACE_COMMANDS,
  /** A deploy mark on the dashboard graphs' time axis (ops.mark). */
  async 'mark deploy'({ ops, args, values }) {
    if (args.length)
      throw new CliError(`mark deploy takes no argument (got ${args[0]}): use --note, --release`);
    const mark = await ops.mark({
      kind: 'deploy',
      ...(values.note !== undefined ? { note: values.note } : {}),
      ...(values.release !== undefined ? { release: values.release } : {}),
    });
    return ok(mark, `marked a deploy at ${new Date(mark.at).toISOString()}`);
  },
  /** Handled by main (it runs until stopped); listed here so that the name is known. */
  ui: async () => ok(null, ''),
  async queues({ ops }) {
    const queues = await ops.queues();
    // the owners of ordered partitions are what the processes report: asked only when a queue has some
    const hasPartitions = queues.some((q) => q.lanes?.some((lane) => lane.partition));
    const processes = hasPartitions || queues.some((q) => q.lanes) ? (await ops.processes()).processes : [];
    const rows = queues.flatMap((q) => [
      [
        q.key,
        q.type,
        q.exists ? String(q.ready) : 'missing',
        q.unacked === undefined ? '-' : String(q.unacked),
        String(q.consumers),
        String(q.dead),
        q.paused ? 'paused' : '',
      ],
      // a queue with fairness: a row per lane under it (docs/guide/fair-share.md)
      ...(q.lanes ?? []).map((lane) => [
        `  ${lane.partition ? 'partition' : 'lane'} ${lane.draining ? `${lane.index} (draining)` : lane.index}`,
        '',
        lane.exists ? String(lane.ready) : 'missing',
        lane.unacked === undefined ? '-' : String(lane.unacked),
        String(lane.consumers),
        '',
        lane.partition ? `owner ${partitionOwner(processes, q, lane)}` : '',
      ]),
    ]);
    const table = formatTable(['QUEUE', 'TYPE', 'READY', 'UNACKED', 'CONSUMERS', 'DEAD', 'PAUSED'], rows);
    // the busiest keys live in the workers' schedulers: asked only when a queue has lanes
    if (!queues.some((q) => q.lanes)) return ok(queues, table);
    const busiest = busiestKeysLines(processes);
    return ok(queues, busiest.length ? `${table}\n${busiest.join('\n')}` : table);
  },

  async processes({ ops }) {
    const report = await ops.processes();
    const rows = report.processes.map((p) => [
      p.id.slice(0, 8),
      p.host,
      String(p.pid),
      p.version,
      p.isLeader ? 'leader' : '',
      p.queues.map((q) => (q.paused ? `${q.key}(paused: ${q.holders.join('+')})` : q.key)).join(' '),
      p.breakers.map((b) => `${b.name}=${b.state}`).join(' '),
    ]);
    const text = [
      report.processes.length
        ? formatTable(['ID', 'HOST', 'PID', 'VERSION', 'CRON', 'QUEUES', 'BREAKERS'], rows)
        : 'no warren process answered',
      ...(report.silent ? [`${report.silent} listening process(es) did not answer`] : []),
    ].join('\n');
    return ok(report, text);
  },

  async pause(ctx) {
    const queue = arg(ctx, 0, 'queue');
    await confirm(`Pause queue '${queue}' in every process?`, ctx.yes, `pause ${queue}`);
    const result = await ctx.ops.pause(queue);
    return ok(result, pauseText('paused', result));
  },

  async resume(ctx) {
    const queue = arg(ctx, 0, 'queue');
    await confirm(`Resume queue '${queue}' in every process?`, ctx.yes, `resume ${queue}`);
    const result = await ctx.ops.resume(queue);
    return ok(result, pauseText('resumed', result));
  },

  async publish(ctx) {
    const job = arg(ctx, 0, 'job');
    const text = arg(ctx, 1, 'json');
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new CliError(`<json> is not valid JSON: ${text.slice(0, 80)}`);
    }
    const published = await ctx.ops.publish(job, data);
    return ok(published, `published ${job} as job ${published.jobId}`);
  },

  async job(ctx) {
    const id = arg(ctx, 0, 'job id');
    const status = await ctx.ops.job(id);
    return ok(status, jobText(id, status));
  },

  async schedules({ ops }) {
    const schedules = await ops.schedules();
    const rows = schedules.map((s) => [
      s.id,
      s.job,
      s.pattern,
      s.tz,
      s.nextFireAt.toISOString(),
      s.heldBy.length === 0 ? 'no process holds it' : (s.firedBy?.slice(0, 8) ?? 'no leader'),
      s.isFired ? 'yes' : `no: ${NOT_FIRED_TEXT[s.notFired ?? 'not-held']}`,
    ]);
    const table = formatTable(['ID', 'JOB', 'PATTERN', 'TZ', 'NEXT', 'FIRED BY', 'FIRES'], rows);
    const text = schedules.length
      ? [table, ...unfiredWarnings(schedules)].join('\n')
      : 'no schedule is declared, in the registry or held by a running process';
    return ok(schedules, text);
  },

  async 'topology plan'({ ops }) {
    const entries = ops.topology.plan();
    return ok(
      entries,
      formatTable(
        ['ENTITY', 'NAME', 'SETTINGS'],
        entries.map((e) => [e.entity, e.name, e.settings]),
      ),
    );
  },

  async 'topology diff'({ ops }) {
    const diff = await ops.topology.diff();
    const rows = diff.drift.map((d) => [d.kind, d.entity, d.name, d.differences.join('; ')]);
    const text = diff.inSync
      ? 'in sync: the broker matches the plan'
      : formatTable(['DRIFT', 'ENTITY', 'NAME', 'DETAIL'], rows);
    return ok(diff, text, diff.inSync ? 0 : 2);
  },

  async 'topology verify'({ ops }) {
    const report = await ops.topology.verify();
    const rows = report.checks.map((c) => [c.ok ? 'ok' : 'FAIL', c.subject, c.check, c.detail]);
    return ok(report, formatTable(['', 'SUBJECT', 'CHECK', 'DETAIL'], rows), report.ok ? 0 : 2);
  },

  async 'topology apply'(ctx) {
    await confirm(
      'Declare the planned topology on the broker (nothing is deleted)?',
      ctx.yes,
      'apply the topology',
    );
    const result = await ctx.ops.topology.apply();
    const text =
      result.created === undefined
        ? 'declared the plan (idempotent; give the management API to see what was missing)'
        : result.created.length
          ? `created ${result.created.length}:\n${result.created.join('\n')}`
          : 'nothing was missing';
    return ok(result, text);
  },
};

/**
 * The process that consumes an ordered partition, as the processes report it (`host:pid`), `-` when none
 * says so. While the count changes, the processes consume the draining set.
 */
function partitionOwner(
  processes: readonly ProcessStatus[],
  queue: { readonly key: string; readonly lanes?: readonly { readonly draining: boolean }[] },
  lane: { readonly index: number; readonly draining: boolean },
): string {
  const drainingSet = queue.lanes?.some((l) => l.draining) ?? false;
  if (lane.draining !== drainingSet) return '-';
  const owners = processes.filter((p) =>
    p.queues.some((s) => s.key === queue.key && s.partitions?.owned.includes(lane.index)),
  );
  return owners.length === 0 ? '-' : owners.map((p) => `${p.host}:${p.pid}`).join(', ');
}

/** Per queue with fairness: the keys with the most jobs waiting, summed over the processes that answered. */
function busiestKeysLines(processes: readonly ProcessStatus[]): string[] {
  const byQueue = new Map<string, Map<string, number>>();
  for (const p of processes)
    for (const q of p.queues)
      for (const { key, waiting } of q.fairness?.busiestKeys ?? []) {
        const keys = byQueue.get(q.key) ?? new Map<string, number>();
        keys.set(key, (keys.get(key) ?? 0) + waiting);
        byQueue.set(q.key, keys);
      }
  return [...byQueue].map(([queue, keys]) => {
    const top = [...keys].sort((a, b) => b[1] - a[1]).slice(0, 5);
    return `busiest keys of ${queue}: ${top.map(([key, n]) => `${key === '' ? '(no key)' : key} (${n} waiting)`).join(', ')}`;
  });
}
