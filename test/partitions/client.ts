/**
 * One workload process of the partition suite, run inside a client namespace (netsplit.sh exec cK) "on node
 * K's side": it works (handlers of every kind, the cron election, the outbox relay) and publishes (confirmed
 * publishes with idempotency keys, delayed jobs, jobs that end in dead letters, outbox rows in PostgreSQL
 * transactions), all through warren's public API. Every operation is one JSON line on stdout (a
 * HistoryEvent without `p`; the harness adds it). Commands arrive as JSON lines on stdin:
 *   {"cmd":"skew","ms":-4000}   fake this process's clock (clock-skew.ts)
 *   {"cmd":"quiesce"}           stop publishing; answers {"e":"quiet"} once every publish in flight settled
 *   {"cmd":"inventory"}         read the parking queues: one `dead-letter` line each, then {"e":"inventory-done"}
 *   {"cmd":"close"}             graceful close, then exit
 *
 *   PARTITION_CLIENT='{"name":"c1",...}' node dist/test/partitions/client.js
 */
import { clockSkew, realNow, setClockSkew } from './clock-skew';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Pool } from 'pg';
import pino from 'pino';
import {
  Cron,
  createWarren,
  defineTopology,
  Job,
  PostgresIdempotencyStore,
  UnrecoverableError,
  WarrenError,
  type JobContext,
  type JobHandler,
} from '../../src';
import type { JobKind } from './history';
import { seededRandom } from './random';
import { PARTITION_DELAY, type ClientConfig } from './workload-config';

export const partitionTopology = defineTopology({ queues: { work: {}, ticks: {} } });

export interface WorkData {
  readonly kind: JobKind;
  /** attempts that fail before one succeeds */
  readonly fails: number;
}

type Emit = (event: Record<string, unknown>) => void;

@Job('split.work', {
  queue: 'work',
  attempts: 4,
  backoff: { type: 'exponential', delayMs: 300, maxDelayMs: 3_000 },
  concurrency: 8,
  timeoutMs: 30_000,
})
export class SplitWork implements JobHandler<WorkData> {
  constructor(private readonly emit: Emit) {}
  async handle(data: WorkData, ctx: JobContext): Promise<void> {
    this.emit({ e: 'start', id: ctx.jobId, attempt: ctx.attempt });
    if (data.kind === 'poison') throw new UnrecoverableError('poison: never retried');
    if (ctx.attempt <= data.fails) throw new Error(`planned failure of attempt ${ctx.attempt}`);
    this.emit({ e: 'complete', id: ctx.jobId, attempt: ctx.attempt });
  }
}

/** A tick every 2 s; whichever process leads fires it, its id `tick@<time>` the same everywhere. */
@Cron('*/2 * * * * *', { id: 'tick', data: {} })
@Job('split.tick', { queue: 'ticks', attempts: 3, concurrency: 2 })
export class SplitTick implements JobHandler<Record<string, never>> {
  constructor(private readonly emit: Emit) {}
  async handle(_data: Record<string, never>, ctx: JobContext): Promise<void> {
    this.emit({ e: 'tick', id: ctx.jobId });
  }
}

/** Shares of each kind among the publishes (they add up to 1). */
const KINDS: readonly [JobKind, number][] = [
  ['plain', 0.35],
  ['retry', 0.2],
  ['delayed', 0.15],
  ['dead', 0.05],
  ['poison', 0.03],
  ['outbox', 0.22],
];

/** The kind whose share of [0, 1) holds `draw`. */
function pickKind(draw: number): JobKind {
  let below = 0;
  for (const [kind, share] of KINDS) {
    below += share;
    if (draw < below) return kind;
  }
  return 'plain';
}

function errorCode(error: unknown): string {
  if (error instanceof WarrenError) return error.code;
  const e = error as { code?: unknown; name?: unknown };
  return typeof e?.code === 'string' ? e.code : String(e?.name ?? 'Error');
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.PARTITION_CLIENT ?? '') as ClientConfig;
  const emit: Emit = (event) => process.stdout.write(`${JSON.stringify({ t: realNow(), ...event })}\n`);
  const random = seededRandom(config.seed);
  const pool = new Pool({ ...config.pg, max: 12 });
  pool.on('error', () => undefined);
  // WARREN_PARTITION_LOG_DIR: warren's own log, debug level, one file per process (tracing a lost job)
  const logDir = process.env.WARREN_PARTITION_LOG_DIR;
  const warren = await createWarren({
    ...(logDir
      ? {
          logger: pino(
            { level: 'debug' },
            pino.destination({ dest: join(logDir, `${config.name}.log`), sync: true }),
          ),
        }
      : {}),
    url: config.urls,
    namespace: config.namespace,
    topology: partitionTopology,
    handlers: [new SplitWork(emit), new SplitTick(emit)],
    delay: PARTITION_DELAY,
    connection: {
      connectionName: `partition ${config.name}`,
      heartbeatSeconds: 5,
      connectTimeoutMs: 5_000,
      reconnect: { maxDelayMs: 2_000 },
    },
    publisher: { timeoutMs: config.publishTimeoutMs },
    worker: { shutdownGraceMs: 5_000 },
    idempotency: new PostgresIdempotencyStore({ pool, tableName: config.idempotencyTable, recheckMs: 2_000 }),
    outbox: { pool, tableName: config.outboxTable, relay: { pollIntervalMs: 500 } },
  });
  warren.on('retried', (r) =>
    emit({ e: 'retried', id: r.jobId, nextAttempt: r.nextAttempt, delayMs: r.delayMs }),
  );
  warren.on('deadLettered', (d) => emit({ e: 'dead', id: d.jobId, reason: d.reason }));
  warren.on('duplicate', (d) => emit({ e: 'duplicate', id: d.jobId }));
  // settled without running: recorded so that a lost job's history says where it went (issue 40's 3.10 losses)
  warren.on('discarded', (d) => emit({ e: 'discarded', id: d.jobId, cause: d.cause }));
  warren.on('cancelled', (d) => emit({ e: 'cancelled', id: d.jobId }));
  warren.on('leadershipChanged', ({ isLeader }) => emit({ e: 'leader', isLeader }));
  warren.on('connected', ({ url }) => emit({ e: 'connected', url: url.replace(/\/\/[^@]*@/, '//') }));
  warren.on('disconnected', () => emit({ e: 'disconnected' }));
  await warren.start();
  emit({ e: 'ready' });

  let sequence = 0;
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
  const publishOne = () => {
    if (inFlight.size >= config.maxInFlight) return;
    const kind = pickKind(random());
    const id = `${config.name}-${++sequence}`;
    const fails = kind === 'retry' ? 1 + Math.floor(random() * 2) : kind === 'dead' ? 99 : 0;
    const data: WorkData = { kind, fails };
    if (kind === 'outbox') {
      track(writeOutbox(id, data));
      return;
    }
    const delayMs = kind === 'delayed' ? 1_000 + Math.floor(random() * 15_000) : undefined;
    const now = realNow();
    emit({ e: 'publish', id, kind, ...(delayMs !== undefined ? { dueAt: now + delayMs } : {}) });
    track(
      warren.publish('split.work', data, { jobId: id, ...(delayMs !== undefined ? { delayMs } : {}) }).then(
        () => emit({ e: 'confirmed', id }),
        (error: unknown) => emit({ e: 'publish-failed', id, code: errorCode(error) }),
      ),
    );
  };
  const writeOutbox = async (id: string, data: WorkData) => {
    const client = await pool.connect().catch(() => undefined);
    if (!client) return emit({ e: 'outbox-failed', id, code: 'PG_CONNECT' });
    try {
      await client.query('BEGIN');
      await warren.outbox.publish(client, 'split.work', data, { jobId: id });
      await client.query('COMMIT');
      emit({ e: 'outbox-committed', id, kind: data.kind });
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      emit({ e: 'outbox-failed', id, code: errorCode(error) });
    } finally {
      client.release();
    }
  };
  const publishing =
    config.ratePerSec > 0
      ? setInterval(publishOne, Math.max(1, Math.round(1_000 / config.ratePerSec)))
      : undefined;

  const commands = createInterface({ input: process.stdin });
  commands.on('line', (line) => {
    const command = JSON.parse(line) as { cmd: string; ms?: number };
    if (command.cmd === 'skew') {
      setClockSkew(command.ms ?? 0);
      emit({ e: 'skew', ms: clockSkew() });
    } else if (command.cmd === 'quiesce') {
      clearInterval(publishing);
      void Promise.allSettled([...inFlight]).then(() => emit({ e: 'quiet' }));
    } else if (command.cmd === 'inventory') {
      void inventory().then(() => emit({ e: 'inventory-done' }));
    } else if (command.cmd === 'close') {
      void warren
        .close({ graceMs: 5_000 })
        .catch(() => undefined)
        .then(() => pool.end().catch(() => undefined))
        .then(() => process.exit(0));
    }
  });
  // the harness is gone: never outlive it
  commands.on('close', () => process.exit(0));

  const inventory = async () => {
    for (const queue of ['work', 'ticks']) {
      const letters = await warren.deadLetters.list(queue, { limit: 1_000_000 });
      for (const letter of letters) emit({ e: 'dead-letter', id: letter.jobId ?? '', reason: letter.reason });
    }
  };
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stdout.write(`${JSON.stringify({ t: realNow(), e: 'crashed', error: String(error) })}\n`);
    process.exit(1);
  });
}
