import { BROKER_OF, BrokerKind, ContenderName } from '../adapters';
import type { CpuTimes } from './cpu';
import type { MachineInfo } from './machine-info';
import type { MetricSpec, RunOutcome, Scenario } from '../scenarios/scenario';
import { spread, Spread } from './stats';

export interface RunRecord {
  scenario: string;
  contender: ContenderName;
  round: number;
  queue: string;
  status: 'ok' | 'failed' | 'skipped';
  /**
   * 1-minute load average as the run started: a high one marks a run disturbed by other work on the machine.
   */
  loadAverage?: number;
  error?: string;
  failedIn?: 'setup' | 'run';
  /** Skipped because the contender lacks what this scenario needs (not carried to other scenarios). */
  unsupported?: boolean;
  /** Everything the run took, set-up, pre-fill and teardown included. */
  elapsedMs?: number;
  outcome?: RunOutcome;
}

export interface MetricSummary extends Spread {
  /** This contender's median divided by the baseline's median. */
  ratio?: number;
}

export interface ContenderSummary {
  contender: ContenderName;
  okRuns: number;
  failedRuns: number;
  /** Why there are no figures (skipped or every run failed), or the first failure. */
  note?: string;
  metrics: Record<string, MetricSummary>;
  /** The run whose primary metric is the median: its CPU times stand beside the figures. */
  medianRun?: { cpu: CpuTimes; wallMs: number; jobs: number; round: number };
  broker: BrokerKind;
}

export interface ScenarioSummary {
  /** All its runs, set-ups and teardowns included. */
  elapsedMs: number;
  id: number;
  key: string;
  title: string;
  metrics: MetricSpec[];
  contenders: ContenderSummary[];
}

export function summarize(
  scenarios: Scenario[],
  contenders: ContenderName[],
  records: RunRecord[],
  baseline: ContenderName,
): ScenarioSummary[] {
  return scenarios.map((scenario) => {
    const rows = contenders.map((name) =>
      summarizeContender(
        scenario,
        name,
        records.filter((r) => r.scenario === scenario.key && r.contender === name),
      ),
    );
    const base = rows.find((row) => row.contender === baseline);
    for (const row of rows) {
      for (const [key, metric] of Object.entries(row.metrics)) {
        const baseMedian = base?.metrics[key]?.median;
        if (baseMedian && !scenario.metrics.find((m) => m.key === key)?.noRatio)
          metric.ratio = metric.median / baseMedian;
      }
    }
    const elapsedMs = records
      .filter((r) => r.scenario === scenario.key)
      .reduce((sum, r) => sum + (r.elapsedMs ?? 0), 0);
    return {
      elapsedMs,
      id: scenario.id,
      key: scenario.key,
      title: scenario.title,
      metrics: scenario.metrics,
      contenders: rows,
    };
  });
}

function summarizeContender(
  scenario: Scenario,
  contender: ContenderName,
  records: RunRecord[],
): ContenderSummary {
  const ok = records.filter((r) => r.status === 'ok' && r.outcome);
  const notOk = records.find((r) => r.status !== 'ok');
  const summary: ContenderSummary = {
    contender,
    broker: BROKER_OF[contender],
    okRuns: ok.length,
    failedRuns: records.filter((r) => r.status === 'failed').length,
    note: notOk ? `${notOk.status}: ${notOk.error}` : undefined,
    metrics: {},
  };
  if (ok.length === 0) return summary;
  for (const metric of scenario.metrics) {
    summary.metrics[metric.key] = spread(ok.map((r) => (r.outcome as RunOutcome).metrics[metric.key]));
  }
  const primary = scenario.metrics[0].key;
  const medianRecord =
    ok.find((r) => r.outcome?.metrics[primary] === summary.metrics[primary].median) ?? ok[0];
  const { cpu, wallMs, jobs } = medianRecord.outcome as RunOutcome;
  summary.medianRun = { cpu, wallMs, jobs, round: medianRecord.round };
  return summary;
}

export interface ReportHeader {
  startedAt: Date;
  durationMs: number;
  argv: string[];
  rounds: number;
  baseline: ContenderName;
  machine: MachineInfo;
  /** 1-minute load averages as the runs started. */
  loadAverages: number[];
  cleanupProblems: string[];
}

export function renderMarkdown(header: ReportHeader, summaries: ScenarioSummary[]): string {
  const m = header.machine;
  const lines = [
    `# Benchmark: warren vs raw amqplib, Rascal, BullMQ`,
    '',
    `Run ${header.startedAt.toISOString()} (\`npm run bench -- contenders ${header.argv.join(' ')}\`), ` +
      `${header.rounds} round(s) interleaved across contenders, total ${(header.durationMs / 1000).toFixed(0)} s.`,
    '',
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGb} GiB, Linux ${m.kernel}; Node ${m.node}; ` +
      `RabbitMQ ${m.rabbitmq}; Redis ${m.redis}; ` +
      `${Object.entries(m.packages)
        .map(([name, version]) => `${name} ${version}`)
        .join(', ')}; commit ${m.gitCommit}.`,
    '',
    loadLine(header.loadAverages, m.cores),
    '',
    `Cells: median (min–max) over rounds; ×${header.baseline}: median ÷ ${header.baseline}'s median ` +
      `(above 1 is more jobs/s, or more latency/memory). CPU: seconds of CPU in the timed part of the median run — ` +
      `the node process that publishes (or consumes, in 4), the forked worker (5, 7), and the contender's broker ` +
      `(RabbitMQ's beam.smp or redis-server). Everything shares ${m.cores} cores.`,
    '',
  ];
  for (const summary of summaries) lines.push(...renderScenario(summary, header.baseline), '');
  lines.push(...METHOD_NOTES);
  if (header.cleanupProblems.length > 0)
    lines.push('', `Cleanup problems: ${header.cleanupProblems.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

function renderScenario(summary: ScenarioSummary, baseline: ContenderName): string[] {
  const head = ['contender'];
  for (const metric of summary.metrics) head.push(metric.label, `×${baseline}`);
  head.push('CPU s node / worker / broker', 'wall s');
  const table = contenderTable(head, summary.contenders, (row, run) => {
    const cells: string[] = [];
    for (const metric of summary.metrics) {
      const value = row.metrics[metric.key];
      cells.push(
        formatSpread(value, metric.digits),
        value.ratio === undefined ? '–' : value.ratio.toFixed(2),
      );
    }
    const cpu = run.cpu;
    const brokerMs = row.broker === 'redis' ? cpu.redisMs : cpu.rabbitmqMs;
    cells.push(
      `${seconds(cpu.nodeMs)} / ${seconds(cpu.workerMs)} / ${seconds(brokerMs)}`,
      seconds(run.wallMs),
    );
    return cells;
  });
  return [
    `## ${summary.id}. ${summary.title}`,
    '',
    `${(summary.elapsedMs / 1000).toFixed(0)} s for all its runs.`,
    '',
    ...table,
  ];
}

type MedianRun = NonNullable<ContenderSummary['medianRun']>;

/**
 * A markdown table with a row per contender: its name (and failed runs), then `cellsOf`; a contender
 * without a run that counted gets its note instead.
 */
export function contenderTable(
  head: string[],
  rows: ContenderSummary[],
  cellsOf: (row: ContenderSummary, run: MedianRun) => string[],
): string[] {
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const row of rows) {
    if (!row.medianRun) {
      lines.push(`| ${row.contender} | ${row.note ?? 'no runs'} |${' |'.repeat(head.length - 2)}`);
      continue;
    }
    const name = row.failedRuns > 0 ? `${row.contender} (${row.failedRuns} failed)` : row.contender;
    lines.push(`| ${[name, ...cellsOf(row, row.medianRun)].join(' | ')} |`);
  }
  return lines;
}

/** The load average as runs started; above `quietBelow` the run shared the machine with other work. */
export function loadLine(loads: number[], cores: number, quietBelow = cores): string {
  if (loads.length === 0) return 'No runs.';
  const { min, median, max } = spread(loads);
  return (
    `1-minute load average as runs started: median ${median.toFixed(1)} (${min.toFixed(1)}–${max.toFixed(1)}) on ${cores} cores` +
    (max > quietBelow
      ? ' — other work shared the machine during some runs: read the ratios, not the absolute figures; per-run load is in the JSON.'
      : '.')
  );
}

function formatSpread(value: Spread, digits: number): string {
  const f = (n: number) =>
    n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return value.min === value.max ? f(value.median) : `${f(value.median)} (${f(value.min)}–${f(value.max)})`;
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? '–' : (ms / 1000).toFixed(2);
}

const METHOD_NOTES = [
  '## Method notes',
  '',
  "- All AMQP contenders: quorum queue, persistent messages, publisher confirms; a publish counts as done on its confirm (Rascal: the publication's `success` event).",
  '- BullMQ: `removeOnComplete`/`removeOnFail` so finished jobs leave Redis, as an ack removes an AMQP message. Its durability is not the same: Redis acknowledges from memory and this Redis has no AOF or RDB, while a quorum queue confirms after fsync.',
  '- Rascal runs on its defaults apart from the above; notably its confirm channel pool (max 5 channels) holds a channel until the confirm arrives, which caps its publishes in flight at 5.',
  '- Bulk (3): BullMQ `addBulk` in chunks of 1,000; warren one `publishMany` call; raw amqplib pipelines every job on one confirm channel (pausing on `drain`); Rascal has no batch API, so 1,000 concurrent `publish` calls.',
  "- Consume (4): the queue is pre-filled untimed (Rascal's with raw amqplib, same content type and persistence); timing starts after a warm-up of jobs consumed. amqplib and Rascal ack every message on its own; warren acks what finished within one event-loop turn together (never before the handler finished); BullMQ moves each job in Redis.",
  '- End-to-end (5): jobs are published at a steady rate without waiting for each confirm; latency runs from the publish call to the handler start in the worker process (CLOCK_MONOTONIC, shared by processes). The first second is warm-up and not counted; CPU includes it.',
  "- Delays (6): BullMQ and warren delayed jobs (warren: its default delay levels, 29 quorum queues of 2^k × 100 ms; `warren-classic-levels`, asked for by name, the same levels as classic queues; the namespace's job-control stream exists before the worker starts, as in a namespace in use, so the worker reads it as it starts: in a new namespace each worker's first delayed job waits for that read, 25–70 ms). Raw amqplib (with and without `noDelay`) only in the single-job scenario: a quorum holding queue with per-message TTL dead-lettering into the job's queue, exact only while nothing else waits in it. Lateness is handler start minus the delay rounded up to the contender's unit (warren 100 ms, BullMQ 1 ms), from the publish call and from the confirm. Single jobs: one at a time, nothing else running; delays of 10 s and more are published spaced out so each still fires alone, and the 1-minute samples wait while the shorter groups run. Bursts: seeded random delays, the same for every contender and round.",
  "- Retries (6): each contender's own mechanism, no backoff: warren republishes with `warren-attempt` + 1 (confirmed, then acked); Rascal's `republish` recovery; BullMQ `attempts: 2` with a fixed backoff of 0; raw amqplib republishes on a confirm channel and acks on the confirm. The fail-once run and the first-time run drain the same number of jobs in the same run.",
  "- amqplib and amqplib-nodelay: the same raw floor, with amqplib's socket default (Nagle on) and with `noDelay: true` (warren's default).",
  "- Follow-up publish (8): concurrency 1; the handler publishes the next job of a chain (awaiting its confirm, as `await ctx.publish(...)` does) before its delivery is acked; a hop runs from one job's handler start to the next one's. The first 20 hops are warm-up.",
  "- Memory (7): the worker process is fed in chunks (the contender's untimed prefill path) while it consumes; heap figures follow a forced GC; peak RSS is getrusage's maximum. One round: growth in the second half shows a leak, a level RSS shows the runtime has settled.",
];
