/**
 * The partition suite (issue 40): `npm run test:partitions` (the short profile, for CI) and
 * `npm run test:partitions -- --full` (every shape, 180 s each, 5 nodes, RabbitMQ 3.10 and 4.3; its report
 * goes to bench/results/). Runs as root: it builds the cluster in network namespaces (test/support/netsplit.sh)
 * and always tears it down, also on a failure, Ctrl-C or SIGTERM (a run killed with SIGKILL leaves what
 * `bash test/support/netsplit.sh clean` removes).
 *
 * Options: --full; --server 3.10|4.3 (repeatable; default: WARREN_TEST_SERVER, or both with --full);
 * --shapes a,b (default: the profile's); --duration S (seconds per shape); --nodes 3|5; --seed N (default:
 * the date); --max-load L (1-min load average above which a run is starved of CPU: invalid, run again);
 * --report FILE (default with --full: bench/results/partitions-<time>.md); --rate N (publishes per second per
 * workload process).
 *
 * The closing line is `partitions: N passed, M failed` (one per shape and server).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, cleanSync } from './cluster';
import { SHAPES, type Shape } from './nemesis';
import { renderReport } from './report';
import { erroredRun, runShape, type ShapeResult } from './run-shape';

export interface Profile {
  readonly full: boolean;
  readonly servers: readonly string[];
  readonly shapes: readonly Shape[];
  readonly durationMs: number;
  readonly nodes: number;
  readonly seed: number;
  readonly maxLoad: number;
  readonly ratePerSec: number;
  readonly report: string | undefined;
  /** Runs of one shape before it is given up as starved. */
  readonly attempts: number;
}

/** The short profile: the shapes that move the most (a cut into halves, the leader's node alone, a frozen broker). */
const SHORT_SHAPES: readonly Shape[] = ['random-halves', 'isolated-leader', 'pause'];

function parseArgs(argv: readonly string[]): Profile {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const all = (flag: string) => argv.flatMap((arg, i) => (arg === flag && argv[i + 1] ? [argv[i + 1]!] : []));
  const full = argv.includes('--full');
  const servers = all('--server');
  const shapes = (value('--shapes')?.split(',') ?? (full ? SHAPES : SHORT_SHAPES)) as Shape[];
  for (const shape of shapes)
    if (!SHAPES.includes(shape)) throw new Error(`unknown shape '${shape}' (${SHAPES.join(', ')})`);
  const stamp = new Date().toISOString().slice(0, 16).replace(/[:]/g, '-');
  return {
    full,
    servers:
      servers.length > 0 ? servers : full ? ['4.3', '3.10'] : [process.env.WARREN_TEST_SERVER ?? '3.10'],
    shapes,
    durationMs: Number(value('--duration') ?? (full ? 180 : 50)) * 1_000,
    nodes: Number(value('--nodes') ?? (full ? 5 : 3)),
    seed: Number(value('--seed') ?? Number(new Date().toISOString().slice(0, 10).replace(/-/g, ''))),
    maxLoad: Number(value('--max-load') ?? 14),
    ratePerSec: Number(value('--rate') ?? (full ? 8 : 10)),
    report: value('--report') ?? (full ? join('bench', 'results', `partitions-${stamp}Z.md`) : undefined),
    attempts: Number(value('--attempts') ?? 3),
  };
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the partition suite runs as root (network namespaces)');
  const profile = parseArgs(process.argv.slice(2));
  const folder = join(
    process.env.WARREN_PARTITION_DIR ?? join(tmpdir(), 'warren-partitions'),
    `${Date.now()}`,
  );
  mkdirSync(folder, { recursive: true });
  // the cluster goes, however this process ends
  let cleaning = false;
  const cleanAndExit = (code: number) => {
    if (!cleaning) {
      cleaning = true;
      cleanSync();
    }
    process.exit(code);
  };
  process.on('SIGINT', () => cleanAndExit(130));
  process.on('SIGTERM', () => cleanAndExit(143));
  console.log(
    `partitions: ${profile.full ? 'full' : 'short'} profile, servers ${profile.servers.join(', ')}, ${profile.nodes} nodes, ` +
      `shapes ${profile.shapes.join(', ')}, ${profile.durationMs / 1_000} s each, seed ${profile.seed}, ` +
      `load limit ${profile.maxLoad}; histories in ${folder}; load now ${loadavg()[0]!.toFixed(2)}`,
  );
  const started = Date.now();
  const results: { server: string; version: string; runs: ShapeResult[] }[] = [];
  let passed = 0;
  let failed = 0;
  try {
    for (const server of profile.servers) {
      const cluster = new Cluster(server, profile.nodes);
      const clusterStarted = Date.now();
      await cluster.up();
      console.log(
        `partitions: RabbitMQ ${server}, ${profile.nodes} nodes up in ${((Date.now() - clusterStarted) / 1_000).toFixed(0)} s`,
      );
      const runs: ShapeResult[] = [];
      for (const shape of profile.shapes) {
        let result: ShapeResult | undefined;
        for (let attempt = 1; attempt <= profile.attempts; attempt++) {
          const shapeStarted = Date.now();
          const options = {
            shape,
            durationMs: profile.durationMs,
            seed: profile.seed + attempt - 1,
            maxLoad: profile.maxLoad,
            drainMs: Math.max(90_000, profile.durationMs),
            ratePerSec: profile.ratePerSec,
            folder,
          };
          try {
            result = await runShape(cluster, options);
          } catch (error) {
            // the harness itself failed (a process did not start, the cluster did not come back): a failed
            // run of this shape, on a cluster built anew for the next one
            console.log(
              `partitions: ${server} ${shape} errored: ${String(error)}; building the cluster anew`,
            );
            result = erroredRun(options, error);
            runs.push(result);
            await cluster.keepLogs(join(folder, `broker-${server}-${shape}-${options.seed}`));
            await cluster.up();
            continue;
          }
          runs.push(result);
          console.log(summaryLine(server, result, Date.now() - shapeStarted));
          if (result.valid) break;
        }
        const verdict = result!.valid && result!.verdicts.ok && result!.selfTest.missed.length === 0;
        if (verdict) passed++;
        else failed++;
      }
      results.push({ server, version: server, runs });
      // the brokers' own account of the runs, kept beside the histories (a clean removes it)
      await cluster.keepLogs(join(folder, `broker-${server}`));
      await cluster.clean();
    }
  } finally {
    cleanSync();
  }
  const report = renderReport(profile, results, Date.now() - started);
  writeFileSync(join(folder, 'report.md'), report);
  writeFileSync(join(folder, 'results.json'), JSON.stringify(results, null, 2));
  if (profile.report) {
    writeFileSync(profile.report, report);
    console.log(`partitions: report written to ${profile.report}`);
  }
  console.log(report);
  console.log(
    `partitions: took ${((Date.now() - started) / 1_000).toFixed(0)} s, load now ${loadavg()[0]!.toFixed(2)}`,
  );
  console.log(`partitions: ${passed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
}

function summaryLine(server: string, r: ShapeResult, tookMs: number): string {
  const v = r.verdicts;
  return (
    `partitions: ${server} ${r.shape} (seed ${r.seed}, ${(tookMs / 1_000).toFixed(0)} s) ` +
    `${r.valid ? (v.ok ? 'OK' : 'FAILED') : `INVALID (${r.invalidReason})`}: ` +
    `confirmed ${r.counts.confirmed}, completed ${r.counts.completed}, dead ${Object.values(r.counts.deadLettered).reduce((a, b) => a + b, 0)}, ` +
    `lost ${v.lost.length}, duplicates ${v.duplicates.length} (caught ${r.counts.duplicatesCaught}), double ticks ${v.doubleTicks.length}, ` +
    `early ${v.early.length}, stuck ${v.stuck.length}, planted caught ${r.selfTest.caught.length}/${r.selfTest.caught.length + r.selfTest.missed.length}, ` +
    `max load ${r.counts.maxLoad1.toFixed(1)}${r.crashed.length ? `, crashed: ${r.crashed.join('; ')}` : ''}`
  );
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error('partitions: error:', error);
    cleanSync();
    console.log('partitions: 0 passed, 1 failed');
    process.exit(1);
  });
}
