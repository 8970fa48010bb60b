/**
 * Checks again the histories a partition run left in its folder (`<server>-<shape>-<seed>.jsonl`) and renders
 * the report from them: for a run that was stopped before its end (the report is written at the end), or to
 * read an old history with the current checker.
 *
 *   node dist/test/partitions/recheck.js <folder> [--max-load 14] [--report FILE] [--duration 180] [--nodes 5]
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, selfTest } from './checker';
import { parseHistory } from './history';
import { SHAPES, type Shape } from './nemesis';
import { renderReport } from './report';
import type { Profile } from './run';
import type { ShapeResult } from './run-shape';

export function recheckFile(file: string, maxLoad: number, durationMs: number): ShapeResult {
  const name = /(\d+\.\d+)-([a-z-]+)-(\d+)\.jsonl$/.exec(file);
  if (!name || !SHAPES.includes(name[2] as Shape)) throw new Error(`not a partition history: ${file}`);
  const history = parseHistory(readFileSync(file, 'utf8'));
  const result = check(history);
  const healed = history.find((e) => e.e === 'nemesis' && e.detail.startsWith('end of the shape'))?.t;
  const drained = history.filter((e) => e.e === 'queue-depth').at(-1)?.t;
  const starved = result.counts.maxLoad1 > maxLoad;
  return {
    ...result,
    shape: name[2] as Shape,
    seed: Number(name[3]),
    durationMs,
    valid: !starved && result.verdicts.drained,
    invalidReason: starved
      ? `load average ${result.counts.maxLoad1.toFixed(1)} above the limit ${maxLoad}`
      : result.verdicts.drained
        ? undefined
        : 'not drained (the run was stopped)',
    selfTest: selfTest(history),
    drainMs: healed !== undefined && drained !== undefined ? drained - healed : 0,
    clusterWholeAfterMs: undefined,
    historyFile: file,
    crashed: [],
  };
}

function main(): void {
  const argv = process.argv.slice(2);
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const folder = argv[0];
  if (!folder)
    throw new Error('usage: recheck <folder> [--max-load L] [--report FILE] [--duration S] [--nodes N]');
  const maxLoad = Number(value('--max-load') ?? 14);
  const durationMs = Number(value('--duration') ?? 180) * 1_000;
  const files = readdirSync(folder)
    .filter((f) => f.endsWith('.jsonl'))
    .sort((a, b) => a.localeCompare(b));
  const servers = [...new Set(files.map((f) => f.split('-')[0]!))];
  const results = servers.map((server) => ({
    server,
    version: server,
    runs: files
      .filter((f) => f.startsWith(`${server}-`))
      .map((f) => recheckFile(join(folder, f), maxLoad, durationMs))
      .sort((a, b) => SHAPES.indexOf(a.shape) - SHAPES.indexOf(b.shape) || a.seed - b.seed),
  }));
  const profile: Profile = {
    full: argv.includes('--full'),
    servers,
    shapes: [...new Set(results.flatMap((r) => r.runs.map((run) => run.shape)))],
    durationMs,
    nodes: Number(value('--nodes') ?? 5),
    seed: Math.min(...results.flatMap((r) => r.runs.map((run) => run.seed))),
    maxLoad,
    ratePerSec: Number(value('--rate') ?? 8),
    report: value('--report'),
    attempts: 0,
  };
  const report = renderReport(profile, results, 0);
  if (profile.report) writeFileSync(profile.report, report);
  console.log(report);
}

if (require.main === module) main();
