/**
 * One shape of the partition suite on a running cluster: the workload processes on each side, the nemesis's
 * schedule carried out, then the heal, the drain, the reading of the broker, and the checker over the history.
 */
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { check, selfTest, type CheckResult } from './checker';
import { PARTITION_DELAY, type ClientConfig } from './workload-config';
import { ClientProcess, type Cluster } from './cluster';
import { parseHistory, type HistoryEvent } from './history';
import { CLIENTS, homeNode, cutGroups, planNemesis, type NemesisOp, type Shape } from './nemesis';

export interface ShapeOptions {
  readonly shape: Shape;
  readonly durationMs: number;
  readonly seed: number;
  /** Load average (1 min) above which the run counts as starved of CPU, hence invalid. */
  readonly maxLoad: number;
  /** How long the drain may take after the heal. */
  readonly drainMs: number;
  readonly ratePerSec: number;
  readonly folder: string;
}

export interface ShapeResult extends CheckResult {
  readonly shape: Shape;
  readonly seed: number;
  readonly durationMs: number;
  readonly valid: boolean;
  readonly invalidReason: string | undefined;
  readonly selfTest: ReturnType<typeof selfTest>;
  readonly drainMs: number;
  readonly clusterWholeAfterMs: number | undefined;
  readonly historyFile: string;
  readonly crashed: readonly string[];
}

const PG = {
  host: process.env.WARREN_PARTITION_PG_HOST ?? '/var/run/postgresql',
  database: 'test',
  user: 'postgres',
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runShape(cluster: Cluster, options: ShapeOptions): Promise<ShapeResult> {
  const id = `${options.shape.replace(/-/g, '_')}_${options.seed}_${Date.now() % 100_000}`;
  const namespace = `split-${id.replace(/_/g, '-')}`;
  mkdirSync(options.folder, { recursive: true });
  const historyFile = join(options.folder, `${cluster.server}-${options.shape}-${options.seed}.jsonl`);
  const out = createWriteStream(historyFile);
  const record = (p: string, event: Record<string, unknown>) =>
    out.write(`${JSON.stringify({ t: Date.now(), ...event, p })}\n`);
  const tables = { idempotencyTable: `split_idem_${id}`, outboxTable: `split_outbox_${id}` };
  const pool = new Pool({ ...PG, max: 2 });
  const leaders = new Map<string, boolean>();

  await waitWhole(cluster, 240_000);
  const clients: ClientProcess[] = [];
  let clientIndex = 0;
  for (const name of CLIENTS) {
    const config: ClientConfig = {
      name,
      urls: cluster.urlsFor(name),
      namespace,
      pg: PG,
      ...tables,
      ratePerSec: options.ratePerSec,
      maxInFlight: 200,
      publishTimeoutMs: 15_000,
      seed: options.seed * 10 + ++clientIndex,
    };
    // one after another: the first declares the topology and creates the tables. A node that has just
    // joined may still refuse a connection for a moment (seen once on 4.3): a second and third try.
    for (let attempt = 1; ; attempt++) {
      const client = new ClientProcess(name, config, cluster.server, (event) => {
        if (event.e === 'leader') leaders.set(name, event.isLeader === true);
        record(name, event);
      });
      if (await client.next('ready', 60_000)) {
        clients.push(client);
        break;
      }
      await client.close(5_000);
      if (attempt === 3) throw new Error(`${name} did not start: ${client.crashed ?? 'exited'}`);
      console.log(`partitions: ${name} did not start (${client.crashed ?? 'exited'}); trying again`);
      await sleep(5_000);
    }
  }

  const loadTimer = setInterval(() => record('harness', { e: 'load', load1: loadavg()[0] }), 5_000);
  const steps = planNemesis(options.shape, cluster.nodes, options.durationMs, options.seed);
  const started = Date.now();
  const paused = new Set<number>();
  const alarmed = new Set<number>();
  const carryOut = async (op: NemesisOp): Promise<string> => {
    switch (op.op) {
      case 'cut':
        await cluster.cut(op.grudges);
        return op.label;
      case 'isolate-leader': {
        const leader = [...leaders].find(([, is]) => is)?.[0] ?? 'c1';
        const node = homeNode(leader, cluster.nodes);
        const others = Array.from({ length: cluster.nodes }, (_, i) => `n${i + 1}`).filter(
          (n) => n !== `n${node}`,
        );
        await cluster.cut(cutGroups([[`n${node}`], others], cluster.nodes));
        return `n${node} isolated (cron leader ${leader} beside it)`;
      }
      case 'heal':
        await cluster.heal();
        return 'healed';
      case 'pause':
        paused.add(op.node);
        await cluster.signal(op.node, 'pause');
        return `n${op.node} SIGSTOP`;
      case 'resume':
        paused.delete(op.node);
        await cluster.signal(op.node, 'resume');
        return `n${op.node} SIGCONT`;
      case 'skew':
        clients.find((c) => c.name === op.client)?.send({ cmd: 'skew', ms: op.ms });
        return `${op.client} clock ${op.ms} ms`;
      case 'disk-alarm': {
        (op.on ? alarmed.add(op.node) : alarmed.delete(op.node)) as unknown;
        const done = await cluster.diskAlarm(op.node, op.on);
        return `n${op.node} disk alarm ${op.on ? 'on' : 'off'}${done ? '' : ' (ctl failed)'}`;
      }
    }
  };
  // A step takes effect when its command returns (a rabbitmqctl call takes seconds on a busy machine): the
  // steps after it move by that time, so that every fault lasts as long as planned.
  let shiftMs = 0;
  for (const step of steps) {
    const wait = started + shiftMs + step.atMs - Date.now();
    if (wait > 0) await sleep(wait);
    const begun = Date.now();
    const detail = await carryOut(step.op).catch((error: unknown) => `failed: ${String(error)}`);
    shiftMs += Date.now() - begun;
    record('nemesis', { e: 'nemesis', op: step.op.op, detail, tookMs: Date.now() - begun });
  }
  const left = started + shiftMs + options.durationMs - Date.now();
  if (left > 0) await sleep(left);

  // Heal everything, whatever the schedule left: links, frozen VMs, alarms, clocks.
  for (const node of paused) await cluster.signal(node, 'resume').catch(() => undefined);
  for (const node of alarmed) await cluster.diskAlarm(node, false);
  await cluster.heal();
  for (const client of clients) client.send({ cmd: 'skew', ms: 0 });
  record('nemesis', { e: 'nemesis', op: 'heal', detail: 'end of the shape: all healed' });
  const healed = Date.now();
  await Promise.all(clients.map((c) => c.send({ cmd: 'quiesce' })));
  await Promise.all(clients.map((c) => c.next('quiet', 60_000)));

  // Drain: until every confirmed job completed or died, or the deadline.
  const drainDeadline = Date.now() + options.drainMs;
  let clusterWholeAfterMs: number | undefined;
  for (;;) {
    await new Promise<void>((resolve) => out.write('', () => resolve()));
    const pending = pendingJobs(parseHistory(readFileSync(historyFile, 'utf8')));
    if (clusterWholeAfterMs === undefined && (await cluster.runningNodes()) === cluster.nodes)
      clusterWholeAfterMs = Date.now() - healed;
    if ((pending === 0 && clusterWholeAfterMs !== undefined) || Date.now() > drainDeadline) break;
    await sleep(2_000);
  }
  const drainMs = Date.now() - healed;
  // A few seconds more: retries and duplicates still on their way show up in the queue depths otherwise.
  await sleep(3_000);
  clearInterval(loadTimer);

  const inventoried = clients[0]!.next('inventory-done', 60_000);
  clients[0]!.send({ cmd: 'inventory' });
  await inventoried;
  await Promise.all(clients.map((c) => c.close()));
  const queues = await cluster.queues([
    ...['work', 'ticks', 'work.dead', 'ticks.dead'].map((key) => `${namespace}.${key}`),
    ...Array.from(
      { length: PARTITION_DELAY.levels + 1 },
      (_, k) => `${namespace}.warren.delay.${String(k).padStart(2, '0')}`,
    ),
  ]);
  for (const queue of queues ?? [])
    record('drain', {
      e: 'queue-depth',
      queue: queue.name,
      role: roleOf(namespace, queue.name),
      messages: queue.messages,
    });
  // what a message count leaves out: deliveries still checked out, and dead letters not yet handed on
  for (const held of (await cluster.quorumHeld(`${namespace}.`)) ?? [])
    record('drain', { e: 'queue-held', ...held, role: roleOf(namespace, held.queue) });
  await new Promise<void>((resolve) => out.end(() => resolve()));
  await pool
    .query(`DROP TABLE IF EXISTS ${tables.idempotencyTable}, ${tables.outboxTable}`)
    .catch(() => undefined);
  await pool.end();

  const history = parseHistory(readFileSync(historyFile, 'utf8'));
  const result = check(history);
  const starved = result.counts.maxLoad1 > options.maxLoad;
  return {
    ...result,
    shape: options.shape,
    seed: options.seed,
    durationMs: options.durationMs,
    valid: !starved && queues !== undefined,
    invalidReason: starved
      ? `load average ${result.counts.maxLoad1.toFixed(1)} above the limit ${options.maxLoad}`
      : queues === undefined
        ? 'the queues could not be listed'
        : undefined,
    selfTest: selfTest(history),
    drainMs,
    clusterWholeAfterMs,
    historyFile,
    crashed: clients.filter((c) => c.crashed).map((c) => `${c.name}: ${c.crashed}`),
  };
}

/** The result of a run the harness could not finish: failed, with the error as its reason. */
export function erroredRun(options: ShapeOptions, error: unknown): ShapeResult {
  const result = check([]);
  return {
    ...result,
    shape: options.shape,
    seed: options.seed,
    durationMs: options.durationMs,
    valid: false,
    invalidReason: `the harness failed: ${String(error).slice(0, 300)}`,
    selfTest: { caught: [], missed: [], notPlantable: [] },
    drainMs: 0,
    clusterWholeAfterMs: undefined,
    historyFile: '',
    crashed: [],
  };
}

function roleOf(namespace: string, queue: string): 'job' | 'delay' | 'parking' | 'other' {
  const name = queue.slice(namespace.length + 1);
  if (name === 'work' || name === 'ticks') return 'job';
  if (/^warren\.delay\.\d+$/.test(name)) return 'delay';
  if (name.endsWith('.dead')) return 'parking';
  return 'other';
}

/** Confirmed (or committed) jobs that have neither completed nor been dead-lettered yet. */
function pendingJobs(history: readonly HistoryEvent[]): number {
  const done = new Set<string>();
  const confirmed = new Set<string>();
  for (const event of history) {
    if (event.e === 'complete' || event.e === 'dead') done.add(event.id);
    else if (event.e === 'confirmed' || event.e === 'outbox-committed') confirmed.add(event.id);
  }
  return [...confirmed].filter((id) => !done.has(id)).length;
}

/** Waits until node 1 sees every node running (3.10 restarts paused minorities by itself after a heal). */
async function waitWhole(cluster: Cluster, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await cluster.runningNodes()) !== cluster.nodes) {
    if (Date.now() > deadline) throw new Error(`the cluster is not whole after ${timeoutMs} ms`);
    await sleep(2_000);
  }
}
