import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { restartSingleNode } from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { privateWarren, useSingleNode } from './private-warren';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 240_000;

const DELAYED = 200;
const RETRYING = 100;
const RETRY_DELAY_MS = 6_000;

const topology = defineTopology({ queues: { later: {} } });

/** Delivery times by job id (the first completed run of each). */
type RunTimes = Map<string, number>;

@Job('later.delayed', { queue: 'later', attempts: 1 })
class DelayedJob implements JobHandler<{ id: string }> {
  constructor(
    private readonly ledger: FaultLedger,
    private readonly ranAt: RunTimes,
  ) {}
  async handle(data: { id: string }) {
    if (!this.ranAt.has(data.id)) this.ranAt.set(data.id, Date.now());
    this.ledger.ran(data.id);
  }
}

@Job('later.retrying', { queue: 'later', attempts: 4, backoff: { type: 'fixed', delayMs: RETRY_DELAY_MS } })
class RetryingJob implements JobHandler<{ id: string }> {
  readonly attempts = new Map<string, number[]>();
  constructor(
    private readonly ledger: FaultLedger,
    private readonly ranAt: RunTimes,
  ) {}
  async handle(data: { id: string }, ctx: JobContext) {
    this.attempts.set(data.id, [...(this.attempts.get(data.id) ?? []), ctx.attempt]);
    if (ctx.attempt === 1) throw new Error('planned failure on the first attempt');
    if (!this.ranAt.has(data.id)) this.ranAt.set(data.id, Date.now());
    this.ledger.ran(data.id);
  }
}

describe('delayed and retrying jobs across a broker restart (durable quorum delay levels)', () => {
  const node = useSingleNode();

  it('keeps every job waiting in the delay levels through the restart and delivers it, never early', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('delays');
    const ledger = new FaultLedger('6. delays and retries across a broker restart');
    const ranAt: RunTimes = new Map();
    const retrying = new RetryingJob(ledger, ranAt);
    const warren = await privateWarren(node.url, {
      namespace,
      topology,
      handlers: [new DelayedJob(ledger, ranAt), retrying],
      // Durable, replicated levels: the test profile's classic non-durable ones would not survive a restart.
      delay: { queueType: 'quorum', levels: 10, unitMs: 100 },
    });
    await warren.start();
    let retried = 0;
    warren.on('retried', () => (retried += 1));

    const dueAt = new Map<string, number>();
    const publishes: Promise<boolean>[] = [];
    for (let i = 0; i < DELAYED; i++) {
      const id = `delayed-${i}`;
      const delayMs = 4_000 + ((i * 61) % 12_000);
      dueAt.set(id, Date.now() + delayMs);
      publishes.push(ledger.track(id, warren.publish(DelayedJob, { id }, { jobId: id, delayMs })));
    }
    for (let i = 0; i < RETRYING; i++) {
      const id = `retrying-${i}`;
      publishes.push(ledger.track(id, warren.publish(RetryingJob, { id }, { jobId: id })));
    }
    assert.ok((await Promise.all(publishes)).every(Boolean), 'every publish confirmed before the restart');
    await waitFor(() => retried >= RETRYING, {
      timeoutMs: 30_000,
      what: 'every retrying job to fail once and wait in the levels',
    });

    const downAt = Date.now();
    const waitingAtRestart = [...dueAt.values()].filter((due) => due > downAt).length;
    await restartSingleNode();
    const upAt = Date.now();
    await waitFor(() => ledger.allConfirmedRan(), {
      timeoutMs: 90_000,
      what: 'every delayed and retried job to arrive',
    });

    const early = [...dueAt].filter(([id, due]) => ranAt.get(id)! < due);
    const dueDuringOutage = [...dueAt].filter(([, due]) => due > downAt && due <= upAt).map(([id]) => id);
    const retriesDue = [...retrying.attempts.keys()];
    const lastCatchUp = Math.max(...[...dueDuringOutage, ...retriesDue].map((id) => ranAt.get(id)!));
    const lateness = [...dueAt].filter(([, due]) => due > upAt).map(([id, due]) => ranAt.get(id)! - due);
    const row = ledger.report(
      lastCatchUp - upAt,
      'node up until the last job that fell due during the outage (and every retry) arrived',
      {
        waitingAtRestart,
        dueDuringOutage: dueDuringOutage.length,
        outageMs: upAt - downAt,
        maxLatenessAfterRestartMs: Math.max(...lateness),
      },
    );
    assert.ok(
      waitingAtRestart >= DELAYED / 2,
      `${waitingAtRestart} delayed jobs were waiting in the levels at the restart`,
    );
    assert.deepEqual(early, [], 'no delayed job ran before its time');
    for (const [id, attempts] of retrying.attempts)
      assert.ok(attempts.includes(2), `${id} ran its second attempt after the restart`);
    assert.equal(row.confirmed, DELAYED + RETRYING);
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
  });
});
