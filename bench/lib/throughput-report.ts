import type { ContenderName } from '../adapters';
import type { CpuTimes } from './cpu';
import type { MachineInfo } from './machine-info';
import { contenderTable, loadLine, type RunRecord, type ScenarioSummary } from './report';

export interface ThroughputHeader {
  startedAt: Date;
  durationMs: number;
  /** The command that repeats the run, as typed. */
  command: string;
  rounds: number;
  baseline: ContenderName;
  /** `RabbitMQ 3.10.8 on 127.0.0.1:5672`. */
  broker: string;
  machine: MachineInfo;
  loadAverages: number[];
  cleanupProblems: string[];
}

/**
 * The throughput suite's table: per scenario and contender the medians with their ratio to the baseline's
 * median in the same run, the CPU per job of the median run (this process, a forked worker, the broker),
 * and every round's figures in run order, so that bimodal rounds show.
 */
export function renderThroughput(
  header: ThroughputHeader,
  summaries: ScenarioSummary[],
  records: RunRecord[],
): string {
  const m = header.machine;
  const lines = [
    `# Throughput: raw amqplib, Rascal and warren on ${header.broker}`,
    '',
    `Run ${header.startedAt.toISOString()}: \`${header.command}\`; ${header.rounds} round(s), interleaved ` +
      `(each round runs every contender once, the order rotating), total ${(header.durationMs / 1000).toFixed(0)} s.`,
    '',
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGb} GiB, Linux ${m.kernel}; Node ${m.node}; ` +
      `RabbitMQ ${m.rabbitmq}; ${Object.entries(m.packages)
        .map(([name, version]) => `${name} ${version}`)
        .join(', ')}; commit ${m.gitCommit}.`,
    '',
    // a quiet machine for this suite: at most half its cores busy with other work
    loadLine(header.loadAverages, m.cores, m.cores / 2),
    '',
    `Cells: median over rounds; ×${header.baseline}: the median ÷ ${header.baseline}'s median in this run ` +
      "(above 1: more jobs/s, or more latency). CPU µs/job: the median run's CPU time in the timed part ÷ its " +
      'jobs — client: the measured node process (`process.cpuUsage`; + the forked worker where there is one), ' +
      "broker: the beam.smp listening on the broker's port (utime+stime from /proc, 10 ms ticks; it counts " +
      'the work of anything else using that broker). Rounds: the first ' +
      'figures of every round, in run order.',
    '',
  ];
  for (const summary of summaries) lines.push(...renderScenario(summary, records, header.baseline), '');
  lines.push(...METHOD);
  if (header.cleanupProblems.length > 0)
    lines.push('', `Cleanup problems: ${header.cleanupProblems.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

function renderScenario(summary: ScenarioSummary, records: RunRecord[], baseline: ContenderName): string[] {
  const shown = summary.metrics.slice(0, 2);
  const head = ['contender'];
  for (const metric of summary.metrics) head.push(metric.label, ...(metric.noRatio ? [] : [`×${baseline}`]));
  head.push('CPU µs/job client', 'broker', `rounds (${shown.map((s) => s.label).join(' / ')})`);
  const table = contenderTable(head, summary.contenders, (row, run) => {
    const cells: string[] = [];
    for (const metric of summary.metrics) {
      const value = row.metrics[metric.key];
      cells.push(format(value.median, metric.digits));
      if (!metric.noRatio) cells.push(value.ratio === undefined ? '–' : value.ratio.toFixed(2));
    }
    return [...cells, ...cpuCells(run), roundsCell(summary, row.contender, records)];
  });
  return [`## ${summary.key}: ${summary.title}`, '', ...table];
}

function cpuCells(run: { cpu: CpuTimes; jobs: number }): string[] {
  const perJob = (ms: number | undefined) => (ms === undefined ? '–' : ((ms * 1000) / run.jobs).toFixed(1));
  const client =
    run.cpu.workerMs === undefined
      ? perJob(run.cpu.nodeMs)
      : `${perJob(run.cpu.nodeMs)} + ${perJob(run.cpu.workerMs)}`;
  return [client, perJob(run.cpu.rabbitmqMs)];
}

function roundsCell(summary: ScenarioSummary, contender: ContenderName, records: RunRecord[]): string {
  const shown = summary.metrics.slice(0, 2);
  return records
    .filter((r) => r.scenario === summary.key && r.contender === contender)
    .sort((a, b) => a.round - b.round)
    .map((r) =>
      r.outcome ? shown.map((m) => format(r.outcome?.metrics[m.key] ?? NaN, m.digits)).join(' / ') : r.status,
    )
    .join('; ');
}

function format(n: number, digits: number): string {
  return n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

const METHOD = [
  '## Method',
  '',
  "- Every contender declares its queue through its own topology (raw amqplib `assertQueue`, Rascal's config, warren's `defineTopology`), durable, of the scenario's type (`classic` or `quorum` in the key); persistent messages, publisher confirms, manual acks.",
  "- warren routes through a direct exchange of its topology (its wire contract); raw amqplib and Rascal publish to the queue. `amqplib-warren-wire` is raw amqplib publishing exactly what warren publishes (the same properties and `warren-*` headers, the same exchange and routing key, `noDelay` as warren sets it) to the queue warren declared: read its broker CPU beside `amqplib`'s for the broker cost of the wire contract (in the retry rows it republishes a failed first attempt as warren's worker does: warren's properties, warren's queue or hold, confirmed before the ack); its client CPU is amqplib's own encoder for those headers (warren encodes its frames itself), so it is no measure of warren's client cost. `amqplib-warren-topology` (asked for by name, retry rows only) is raw amqplib's own messages and retry through warren's queue and hold: beside the two, it tells the broker cost of warren's topology from that of its messages.",
  "- Every queue and namespace is named `<run>-c<contender>-s<scenario>-r<round>`, one length for all contenders and short enough that no TTL queue's name passes 64 bytes (over that, RabbitMQ 3.10 pays 15–20 % more a retry through it; runs before 2026-12-06T03:30Z named them after the contender). `amqplib-control` (asked for by name) is raw amqplib again in every round: its ratio to `amqplib` is the run's noise floor. `amqplib-at-least-once` (asked for by name, quorum retries with a backoff only) is raw amqplib whose quorum TTL queue dead-letters at-least-once (`x-dead-letter-strategy`, with `reject-publish` overflow), the guarantee of warren's quorum holds, where RabbitMQ's default (raw `amqplib`'s) is at-most-once.",
  '- Consume: the queue is pre-filled untimed; the clock starts after a warm-up of jobs consumed; the handler is an async no-op, awaited before each ack (warren acks what finished in one event-loop turn together).',
  '- Batch publish: each window is one batch (warren `publishMany`; raw amqplib pipelined on one confirm channel; Rascal concurrent `publish` calls) whose confirms are all awaited before the next window.',
  "- Retry: the same jobs drained failing once each and succeeding first time, at the same concurrency; every contender's handler fails its first attempt with an `Error` (raw amqplib's runs an async handler and republishes when it rejects; before 2026-12-05 raw amqplib republished on a header check, creating no Error). Backoff 0: raw amqplib republishes straight back to the queue, Rascal its `republish` recovery, warren `backoff: { type: 'fixed', delayMs: 0 }`. Backoff 1 s: raw amqplib republishes through one TTL queue of 1 s dead-lettering back, Rascal `forward`s to such a queue in its topology, warren goes through its hold (one TTL queue in front of the job queue, from its delay levels' plan) and `warren-in-place` retries in place on a RabbitMQ 4.3 quorum queue (`inPlaceRetryMs`). Acked after the copy is confirmed.",
  '- End-to-end: jobs published at a steady rate without awaiting each confirm, consumed by a forked worker process; latency from the publish call to the handler start. Serial: one caller awaiting each confirmed publish.',
];
