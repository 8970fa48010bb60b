/** The partition suite's report: one table per broker, a row per run of a shape, and what each verdict means. */
import { loadavg } from 'node:os';
import type { Profile } from './run';
import type { ShapeResult } from './run-shape';

const sum = (counts: Readonly<Record<string, number>>) => Object.values(counts).reduce((a, b) => a + b, 0);
const list = (counts: Readonly<Record<string, number>>) =>
  Object.entries(counts)
    .map(([key, n]) => `${key} ${n}`)
    .join(', ') || '–';

export function renderReport(
  profile: Profile,
  results: readonly { server: string; version: string; runs: readonly ShapeResult[] }[],
  tookMs: number,
): string {
  const lines = [
    `# Partition suite: ${profile.full ? 'full' : 'short'} profile`,
    '',
    `${profile.nodes} nodes per cluster, ${profile.durationMs / 1_000} s per shape, seed ${profile.seed}, ` +
      `${profile.ratePerSec} publishes/s from each of 3 workload processes, load limit ${profile.maxLoad} ` +
      `(1-min load average; a run above it is invalid and runs again with the next seed). ` +
      `${tookMs > 0 ? `Took ${(tookMs / 60_000).toFixed(1)} min; ` : ''}` +
      `load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}. Command: \`npm run test:partitions --${profile.full ? ' --full' : ''}\`.`,
    '',
  ];
  for (const { server, version, runs } of results) {
    lines.push(
      `## RabbitMQ ${version}`,
      '',
      '| shape | seed | valid (max load) | published | confirmed | failed publishes | completed | dead letters | unexpected dead | retries | duplicates caught | ticks | leader changes | **lost** | uncaught duplicates | double ticks | early | stuck | planted faults caught | drain |',
      '|---|---:|---|---:|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
    );
    for (const r of runs) {
      const v = r.verdicts;
      const c = r.counts;
      lines.push(
        `| ${r.shape} | ${r.seed} | ${r.valid ? 'yes' : `**no**: ${r.invalidReason}`} (${c.maxLoad1.toFixed(1)}) | ${c.published} | ${c.confirmed} | ` +
          `${list(c.failedPublishes)} | ${c.completed} | ${sum(c.deadLettered)} (${list(c.deadLettered)}) | ${list(c.unexpectedDead)} | ` +
          `${c.retries} | ${c.duplicatesCaught} | ${c.ticks} | ${c.leaderChanges} | **${v.lost.length}** | ${v.duplicates.length} | ` +
          `${v.doubleTicks.length} | ${v.early.length} | ${v.stuck.length} | ${r.selfTest.caught.length}/${r.selfTest.caught.length + r.selfTest.missed.length}` +
          `${r.selfTest.notPlantable.length ? ` (not plantable: ${r.selfTest.notPlantable.join(', ')})` : ''} | ${(r.drainMs / 1_000).toFixed(0)} s |`,
      );
    }
    const faults = runs.filter((r) => !r.verdicts.ok || r.crashed.length > 0);
    for (const r of faults)
      lines.push(
        '',
        `**${server} ${r.shape}, seed ${r.seed}**: ` +
          JSON.stringify({
            lost: r.verdicts.lost.slice(0, 20),
            duplicates: r.verdicts.duplicates.slice(0, 20),
            doubleTicks: r.verdicts.doubleTicks.slice(0, 20),
            early: r.verdicts.early.slice(0, 20),
            stuck: r.verdicts.stuck,
            deadWithoutReason: r.verdicts.deadWithoutReason.slice(0, 20),
            strangers: r.verdicts.strangers.slice(0, 20),
            drained: r.verdicts.drained,
            crashed: r.crashed,
          }),
      );
    lines.push('');
  }
  lines.push(
    'Columns: *confirmed* counts publishes the broker confirmed plus outbox rows committed; *completed* the confirmed jobs ' +
      'that ran to completion; *dead letters* what the parking queues held after the drain, by reason (jobs meant to die: ' +
      '5 % fail every attempt, 3 % throw UnrecoverableError; *unexpected dead*: others); *duplicates caught*: copies the ' +
      'PostgreSQL idempotency store acked without running; *ticks*: cron ticks that ran (every 2 s while a leader was ' +
      'reachable). Verdicts (must be 0): **lost** (confirmed, neither completed nor in dead letters), uncaught duplicates ' +
      '(a job or tick that ran to completion twice), double ticks, early (a delayed job started before its due time by the ' +
      "checker's clock), stuck (messages left in a job queue or delay level after the drain). *Planted faults caught*: the " +
      "checker run on this run's history doctored with a loss, a duplicate, an early job and a double tick.",
  );
  return `${lines.join('\n')}\n`;
}
