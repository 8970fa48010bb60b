import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DecodeError, HEADERS, MAX_DELAY_MS, UnknownJobError } from '../../../src';
import { planTopology, resolveTopologyOptions } from '../../../src/topology';
import { jobProperties } from '../../../src/message';
import type { PlannedJobQueue } from '../../../src/topology';
import {
  decideClaim,
  decideRedelivery,
  isVerdict,
  triageDelivery,
  type DeliveryVerdict,
} from '../../../src/worker/delivery-triage';
import type { RegisteredJob } from '../../../src/worker/registered-job';

const plan = planTopology({
  topology: { queues: { mail: {}, other: {} } },
  jobs: [
    { name: 'mail.send', queue: 'mail' },
    { name: 'other.run', queue: 'other' },
  ],
  options: resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } }),
});
const queue = plan.queues.find((q) => q.name === 'app.mail')! as PlannedJobQueue;
const registered = (name: string): RegisteredJob => ({
  planned: plan.jobs.get(name)!,
  handler: { handle: async () => undefined },
  attempts: 3,
  backoff: { type: 'fixed', delayMs: 100 },
  timeoutMs: 1_000,
  schema: undefined,
  breakers: [],
});
const jobs = new Map([
  ['mail.send', registered('mail.send')],
  ['other.run', registered('other.run')],
]);
const now = 1_700_000_000_000;

function delivery(
  name = 'mail.send',
  headers: Record<string, unknown> = {},
  body: unknown = { to: 'a' },
  extra: { deliverAt?: number; maxAttempts?: number; attempt?: number } = {},
) {
  const properties = jobProperties({
    name,
    jobId: 'j1',
    body: Buffer.alloc(0),
    attempt: extra.attempt ?? 1,
    enqueuedAt: now - 10,
    headers,
    deliverAt: extra.deliverAt,
    maxAttempts: extra.maxAttempts,
  });
  return { content: Buffer.from(JSON.stringify(body)), properties: properties as never };
}

function verdict(result: ReturnType<typeof triageDelivery>): DeliveryVerdict {
  assert.ok(isVerdict(result), 'expected a verdict, got a job to run');
  return result;
}

describe('triageDelivery', () => {
  it('lets a sound delivery run, as the decoded job with its attempts clamped', () => {
    const result = triageDelivery({ message: delivery(), queue }, { jobs, maxBodyBytes: 10_000 }, now);
    assert.ok(!isVerdict(result));
    assert.equal(result.name, 'mail.send');
    assert.equal(result.jobId, 'j1');
    assert.deepEqual(result.data, { to: 'a' });
    assert.equal(result.attempt, 1);
    assert.equal(result.maxAttempts, 3);
  });

  it('dead-letters a body over maxBodyBytes as too-large without parsing it', () => {
    const message = { content: Buffer.from('not json at all'), properties: {} as never };
    const result = verdict(triageDelivery({ message: message, queue }, { jobs, maxBodyBytes: 5 }, now));
    assert.equal(result.action, 'dead-letter');
    assert.ok(result.action === 'dead-letter' && result.reason === 'too-large');
    assert.ok(result.error instanceof DecodeError);
    assert.equal(result.job, undefined);
  });

  it('dead-letters what does not decode as undecodable', () => {
    const message = { content: Buffer.from('{'), properties: delivery().properties };
    const result = verdict(triageDelivery({ message: message, queue }, { jobs, maxBodyBytes: 10_000 }, now));
    assert.ok(result.action === 'dead-letter' && result.reason === 'undecodable');
    assert.equal(result.job, undefined);
  });

  it('dead-letters a job no handler knows as unknown-job, naming the known ones', () => {
    const result = verdict(
      triageDelivery({ message: delivery('mail.other'), queue }, { jobs, maxBodyBytes: 10_000 }, now),
    );
    assert.ok(result.action === 'dead-letter' && result.reason === 'unknown-job');
    assert.ok(result.error instanceof UnknownJobError);
    assert.equal(result.job?.name, 'mail.other');
  });

  it('dead-letters a job delivered from a queue it does not belong to as wrong-queue', () => {
    const result = verdict(
      triageDelivery({ message: delivery('other.run'), queue }, { jobs, maxBodyBytes: 10_000 }, now),
    );
    assert.ok(result.action === 'dead-letter' && result.reason === 'wrong-queue');
  });

  it('dead-letters forged control headers as invalid-headers', () => {
    const zero = verdict(
      triageDelivery(
        { message: delivery('mail.send', {}, {}, { attempt: 0 }), queue },
        { jobs, maxBodyBytes: 10_000 },
        now,
      ),
    );
    assert.ok(zero.action === 'dead-letter' && zero.reason === 'invalid-headers');
    const far = delivery('mail.send', {}, {}, { deliverAt: now + MAX_DELAY_MS + 86_400_000 });
    const result = verdict(triageDelivery({ message: far, queue }, { jobs, maxBodyBytes: 10_000 }, now));
    assert.ok(result.action === 'dead-letter' && result.reason === 'invalid-headers');
  });

  it('lowers the attempts to warren-max-attempts, never raises them, and clamps the attempt', () => {
    const lower = triageDelivery(
      { message: delivery('mail.send', {}, {}, { maxAttempts: 2, attempt: 5 }), queue },
      { jobs, maxBodyBytes: 10_000 },
      now,
    );
    assert.ok(!isVerdict(lower));
    assert.equal(lower.maxAttempts, 2);
    assert.equal(lower.attempt, 2);
    const higher = triageDelivery(
      { message: delivery('mail.send', {}, {}, { maxAttempts: 9 }), queue },
      { jobs, maxBodyBytes: 10_000 },
      now,
    );
    assert.ok(!isVerdict(higher));
    assert.equal(higher.maxAttempts, 3);
  });

  it('re-delays a job due later by the time left, and runs one that is due', () => {
    const later = verdict(
      triageDelivery(
        { message: delivery('mail.send', {}, {}, { deliverAt: now + 700 }), queue },
        { jobs, maxBodyBytes: 10_000 },
        now,
      ),
    );
    assert.equal(later.action, 'redelay');
    assert.ok(later.action === 'redelay' && later.delayMs === 700 && later.headers === undefined);
    const due = triageDelivery(
      { message: delivery('mail.send', {}, {}, { deliverAt: now }), queue },
      { jobs, maxBodyBytes: 10_000 },
      now,
    );
    assert.ok(!isVerdict(due));
  });
});

describe('decideRedelivery', () => {
  const job = (redeliveries: number) => {
    const decoded = triageDelivery(
      { message: delivery('mail.send', { [HEADERS.redeliveries]: redeliveries }), queue },
      { jobs, maxBodyBytes: 10_000 },
      now,
    );
    assert.ok(!isVerdict(decoded));
    return decoded;
  };

  it('re-delays a redelivered job by a growing backoff, counting it in warren-redeliveries', () => {
    assert.deepEqual(decideRedelivery(job(0), 5), {
      action: 'redelay',
      delayMs: 1_000,
      headers: { [HEADERS.redeliveries]: 1 },
      job: job(0),
    });
    const third = decideRedelivery(job(2), 5);
    assert.ok(third.action === 'redelay' && third.delayMs === 3_000);
  });

  it('caps the backoff at 10 s', () => {
    const result = decideRedelivery(job(20), 100);
    assert.ok(result.action === 'redelay' && result.delayMs === 10_000);
  });

  it('dead-letters it as delivery-limit once the count reaches the limit', () => {
    const result = decideRedelivery(job(4), 5);
    assert.ok(result.action === 'dead-letter' && result.reason === 'delivery-limit');
    assert.match(result.error.message, /delivered 6 times without being settled/);
  });
});

describe('decideClaim', () => {
  it('runs a claimed job and acks a duplicate of a completed one unrun', () => {
    assert.equal(decideClaim({ status: 'claimed' }, 100), 'run');
    assert.equal(decideClaim({ status: 'completed' }, 100), 'duplicate');
  });

  it('re-delays a job another worker runs by its retry time, never sooner than one delay unit', () => {
    assert.equal(decideClaim({ status: 'running', retryInMs: 2_500 }, 100), 2_500);
    assert.equal(decideClaim({ status: 'running', retryInMs: 0 }, 100), 100);
  });
});
