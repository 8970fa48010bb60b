/**
 * The bookkeeping of an outbox fault scenario. A writer commits (or deliberately rolls back)
 * transactions that each write a few jobs through `warren.outbox.publish`; the handler reports every
 * run. Counts come from what ran, never from what should have happened:
 *   committed      job ids whose transaction's COMMIT succeeded
 *   rolledBack     job ids whose transaction was rolled back on purpose or failed before COMMIT
 *   uncertain      job ids whose COMMIT itself failed (the database went away): either outcome is right
 *   lost           committed ids that never ran: the guarantee is 0
 *   phantoms       rolled-back ids that ran: the guarantee is 0
 *   duplicates     ids that ran more than once (at least once under faults), each explained by the test
 */
import type { Pool, PoolClient } from 'pg';
import type { Warren } from '../../src';
import { OutboxWork } from '../fixtures/outbox-fault-jobs';
import { passTime } from '../support/wait-for';

export class OutboxLedger {
  readonly committed = new Set<string>();
  readonly rolledBack = new Set<string>();
  readonly uncertain = new Set<string>();
  readonly runs = new Map<string, number>();
  private readonly started = Date.now();
  private next = 0;

  constructor(readonly scenario: string) {}

  /** The handler to run: it counts runs per job id. */
  handler(): OutboxWork {
    return new OutboxWork((jobId) => this.runs.set(jobId, (this.runs.get(jobId) ?? 0) + 1));
  }

  /** One transaction writing `jobs` jobs; committed unless `rollback`. Never throws. */
  async transaction(pool: Pool, warren: Warren, jobs: number, rollback: boolean): Promise<void> {
    const ids = Array.from({ length: jobs }, () => `${this.scenario.replace(/\W+/g, '-')}-${this.next++}`);
    let client: PoolClient | undefined;
    let committing = false;
    try {
      client = await pool.connect();
      // A server restart resets checked-out connections: the failing query carries the error, and an
      // 'error' event without a listener would crash the test process.
      client.on('error', () => undefined);
      await client.query('BEGIN');
      for (const id of ids) await warren.outbox.publish(client, OutboxWork, { n: 0 }, { jobId: id });
      if (rollback) throw new Error('rolled back on purpose');
      committing = true;
      await client.query('COMMIT');
      for (const id of ids) this.committed.add(id);
    } catch {
      for (const id of ids) (committing ? this.uncertain : this.rolledBack).add(id);
      await client?.query('ROLLBACK').catch(() => undefined);
    } finally {
      client?.release(committing && !this.committed.has(ids[0]!));
    }
  }

  /** Every committed id ran at least once. */
  get allCompleted(): boolean {
    for (const id of this.committed) if (!this.runs.has(id)) return false;
    return true;
  }

  row(extra: Record<string, unknown> = {}) {
    const lost = [...this.committed].filter((id) => !this.runs.has(id)).length;
    const phantoms = [...this.rolledBack].filter((id) => this.runs.has(id)).length;
    const duplicates = [...this.runs.values()].filter((n) => n > 1).length;
    const uncertainRan = [...this.uncertain].filter((id) => this.runs.has(id)).length;
    return {
      scenario: this.scenario,
      committed: this.committed.size,
      rolledBack: this.rolledBack.size,
      uncertain: this.uncertain.size,
      uncertainRan,
      completed: this.committed.size - lost,
      lost,
      phantoms,
      duplicates,
      durationMs: Date.now() - this.started,
      ...extra,
    };
  }

  /** Prints the scenario's row of the figures table (`OUTBOX-FAULT-ROW` + JSON) and returns it. */
  report(extra: Record<string, unknown> = {}) {
    const row = this.row(extra);
    console.log(`OUTBOX-FAULT-ROW ${JSON.stringify(row)}`);
    return row;
  }
}

/** Writes transactions in a loop (every 4th rolled back) until stopped; `pauseMs` paces it. */
export class OutboxWriter {
  private running: Promise<void> | undefined;
  private stopped = false;
  transactions = 0;

  constructor(
    private readonly ledger: OutboxLedger,
    private readonly pool: Pool,
    private readonly warren: Warren,
    private readonly options: { jobsPerTransaction: number; pauseMs: number },
  ) {}

  start(): void {
    this.running = (async () => {
      while (!this.stopped) {
        await this.ledger.transaction(
          this.pool,
          this.warren,
          this.options.jobsPerTransaction,
          this.transactions++ % 4 === 3,
        );
        // Pacing: a steady stream of transactions, not a flood.
        await passTime(this.options.pauseMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
