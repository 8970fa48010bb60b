import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as amqp from 'amqplib';
import { CircuitOpenError, HEADERS, RetryLaterError, UnrecoverableError } from '../../../src';
import type { DecodedJob } from '../../../src/message';
import type { PlannedJobQueue } from '../../../src/topology';
import { DedupRelease } from '../../../src/worker/dedup-release';
import { Delivery, type JobDelivery, type Settlement } from '../../../src/worker/delivery';
import { OutcomeSettler, type OutcomeSettlerDeps } from '../../../src/worker/outcome-settler';
import type { RegisteredJob } from '../../../src/worker/registered-job';
import type { Republisher } from '../../../src/worker/republisher';
import type { RunOutcome } from '../../../src/worker/run-handler';

/** What the settler did: settle calls, republishes and events, in order. */
function harness(options: { idempotency?: boolean; inPlace?: boolean } = {}) {
  const calls: unknown[][] = [];
  const record =
    (...head: unknown[]) =>
    (..._rest: unknown[]) => {
      calls.push(head);
    };
  const republisher = {
    delayed: async (_d: unknown, delayMs: number, headers: object) => {
      calls.push(['delayed', delayMs, headers]);
      return true;
    },
    deadLetter: async (_d: unknown, reason: string, error: unknown) => {
      calls.push(['deadLetter', reason, error]);
    },
  } as unknown as Republisher;
  const settlement: Settlement = {
    ack: record('ack'),
    flush: () => undefined,
    requeue: record('requeue'),
    reject: record('reject'),
    retryInPlace: record('retryInPlace'),
  };
  const idempotency = {
    complete: async (id: string) => void calls.push(['complete', id]),
    release: async (id: string) => void calls.push(['release', id]),
  };
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined } as never;
  const deps: OutcomeSettlerDeps = {
    republisher,
    dedup: new DedupRelease(undefined, log),
    idempotency: options.idempotency ? idempotency : undefined,
    answers: { confirms: { send: async () => undefined }, log },
    emit: ((event: string, payload: object) => calls.push(['emit', event, payload])) as never,
    listens: () => true,
    log,
    postponeDelayMs: 5_000,
    inPlaceRetries: () => options.inPlace === true,
  };
  return { calls, settlement, settler: new OutcomeSettler(deps) };
}

const message = {
  properties: { headers: {} },
  fields: { redelivered: false, deliveryTag: 1 },
} as unknown as amqp.ConsumeMessage;
const queue = { key: 'mail', name: 'app.mail' } as PlannedJobQueue;
const job = { jobId: 'j1', name: 'mail.send', attempt: 1, maxAttempts: 3 } as DecodedJob;
const registered = {
  attempts: 3,
  backoff: { type: 'fixed', delayMs: 200, jitter: 0 },
} as unknown as RegisteredJob;

function run(h: ReturnType<typeof harness>, outcome: RunOutcome, attempt = 1, on = queue) {
  const delivery: Delivery = new Delivery(message, on, h.settlement);
  delivery.assignJob({ ...job, attempt });
  return h.settler.settle(delivery satisfies JobDelivery, registered, outcome);
}

describe('OutcomeSettler', () => {
  it('records, acks and reports a completed job', async () => {
    const h = harness({ idempotency: true });
    await run(h, { kind: 'completed', result: 42 });
    assert.deepEqual(h.calls.slice(0, 2), [['complete', 'j1'], ['ack']]);
    const completed = h.calls.find((c) => c[0] === 'emit' && c[1] === 'completed')!;
    assert.equal((completed[2] as { result: unknown }).result, 42);
  });

  it('releases the claim and requeues an aborted job without spending an attempt', async () => {
    const h = harness({ idempotency: true });
    await run(h, { kind: 'aborted' });
    assert.deepEqual(h.calls, [['release', 'j1'], ['requeue']]);
  });

  it('retries a failed attempt through the delay levels with the next attempt in its header', async () => {
    const h = harness();
    const error = new Error('smtp down');
    await run(h, { kind: 'failed', error });
    assert.deepEqual(h.calls[0], [
      'emit',
      'failed',
      { jobId: 'j1', name: 'mail.send', queue: 'mail', attempt: 1, error, willRetry: true },
    ]);
    assert.deepEqual(h.calls[1], ['delayed', 200, { [HEADERS.attempt]: 2 }]);
    assert.equal(h.calls[2]![1], 'retried');
  });

  it('dead-letters the job after the last attempt, with its reason', async () => {
    const h = harness();
    const error = new Error('still down');
    await run(h, { kind: 'failed', error }, 3);
    assert.deepEqual(h.calls.at(-1), ['deadLetter', 'attempts-exhausted', error]);
  });

  it('dead-letters an unrecoverable error at once', async () => {
    const h = harness();
    const error = new UnrecoverableError('bad address');
    await run(h, { kind: 'failed', error });
    assert.deepEqual(h.calls.at(-1), ['deadLetter', 'unrecoverable', error]);
  });

  it('postpones a job refused by an open breaker without spending an attempt', async () => {
    const h = harness();
    await run(h, { kind: 'failed', error: new CircuitOpenError('mailer') });
    assert.deepEqual(h.calls[0], ['delayed', 5_000, {}]);
    assert.deepEqual(h.calls[1]![1], 'postponed');
    assert.equal((h.calls[1]![2] as { breaker: string }).breaker, 'mailer');
  });

  it('retries in place on a queue whose in-place delay is the backoff, where the broker supports it', async () => {
    const inPlaceQueue = { ...queue, inPlaceRetryMs: 200 } as PlannedJobQueue;
    const error = new Error('smtp down');
    const h = harness({ inPlace: true });
    await run(h, { kind: 'failed', error }, 1, inPlaceQueue);
    assert.deepEqual(
      h.calls.map((c) => c.slice(0, 2)),
      [['emit', 'failed'], ['retryInPlace'], ['emit', 'retried']],
    );
    assert.equal((h.calls[2]![2] as { nextAttempt: number }).nextAttempt, 2);
    // an older broker (no x-delayed-retry): republished through the levels as always
    const old = harness({ inPlace: false });
    await run(old, { kind: 'failed', error }, 1, inPlaceQueue);
    assert.deepEqual(old.calls[1], ['delayed', 200, { [HEADERS.attempt]: 2 }]);
    // another delay (RetryLaterError) and a postponement (no attempt spent) are republished
    const later = harness({ inPlace: true });
    await run(later, { kind: 'failed', error: new RetryLaterError(500) }, 1, inPlaceQueue);
    assert.deepEqual(later.calls[1], ['delayed', 500, { [HEADERS.attempt]: 2 }]);
    const postponed = harness({ inPlace: true });
    await run(postponed, { kind: 'failed', error: new CircuitOpenError('mailer') }, 1, inPlaceQueue);
    assert.deepEqual(postponed.calls[0], ['delayed', 5_000, {}]);
  });
});
