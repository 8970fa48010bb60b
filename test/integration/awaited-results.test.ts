import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  defineTopology,
  Job,
  JobResultError,
  UnrecoverableError,
  type JobContext,
  type JobHandler,
} from '../../src';
import {
  cleanup,
  messageCount,
  rawConnection,
  testNamespace,
  testWarren,
  closeConnectionsNamed,
} from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { math: {}, victim: {} } });

@Job('math.add', { queue: 'math', attempts: 3, backoff: { type: 'fixed', delayMs: 100 } })
class Add implements JobHandler<{ a: number; b: number; failTimes?: number; fatal?: boolean }> {
  readonly attempts = new Map<string, number>();
  handle(data: { a: number; b: number; failTimes?: number; fatal?: boolean }, ctx: JobContext) {
    this.attempts.set(ctx.jobId, ctx.attempt);
    if (data.fatal) throw new UnrecoverableError('cannot add these');
    if (ctx.attempt <= (data.failTimes ?? 0)) throw new RangeError(`attempt ${ctx.attempt} fails`);
    return { sum: data.a + data.b, attempt: ctx.attempt };
  }
}

@Job('math.slow', { queue: 'math', attempts: 1, timeoutMs: 20_000 })
class Slow implements JobHandler<object> {
  release: () => void = () => undefined;
  started = 0;
  handle() {
    this.started++;
    return new Promise<string>((resolve) => {
      this.release = () => resolve('done');
    });
  }
}

/** A publisher-only instance and a worker instance in the same namespace (two processes' worth). */
async function pair(handlers: object[], label = 'res') {
  const namespace = testNamespace(label);
  const worker = await testWarren({ namespace, topology, handlers });
  await worker.start();
  const publisher = await testWarren({
    namespace,
    topology,
    jobs: [Add, Slow],
    connection: { connectionName: `warren-test ${namespace} publisher` },
  });
  return { namespace, worker, publisher };
}

describe('awaited results', () => {
  afterEach(cleanup);
  after(cleanup);

  it("returns the handler's value to another instance, and its final error after retries", async () => {
    const add = new Add();
    const { publisher } = await pair([add, new Slow()]);
    const ok = await publisher.publishWithResult('math.add', { a: 2, b: 3 });
    assert.deepEqual(await ok.result({ timeoutMs: 10_000 }), { sum: 5, attempt: 1 });

    // Two failed attempts: each retry is republished by the worker (without reply_to, which would make
    // RabbitMQ 3.10 close the worker's channel, 406), and the third attempt's value still comes back.
    const retried = await publisher.publishWithResult('math.add', { a: 1, b: 1, failTimes: 2 });
    assert.deepEqual(await retried.result({ timeoutMs: 10_000 }), { sum: 2, attempt: 3 });

    const failing = await publisher.publishWithResult('math.add', { a: 1, b: 1, failTimes: 9 });
    const error = await failing.result({ timeoutMs: 10_000 }).then(
      () => assert.fail('should reject'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof JobResultError);
    assert.equal(error.code, 'JOB_FAILED');
    assert.equal(error.remoteName, 'RangeError');
    assert.match(error.message, /attempt 3 fails/);
    assert.equal(add.attempts.get(failing.jobId), 3);

    // through the delay levels (the broker dead-letters it into the queue, reply_to intact)
    const delayed = await publisher.publishWithResult('math.add', { a: 4, b: 4 }, { delayMs: 300 });
    assert.deepEqual(await delayed.result({ timeoutMs: 10_000 }), { sum: 8, attempt: 1 });

    const fatal = await publisher.publishWithResult('math.add', { a: 1, b: 1, fatal: true });
    await assert.rejects(fatal.result({ timeoutMs: 10_000 }), { code: 'JOB_FAILED' });
  });

  it('needs a timeout, and rejects with RESULT_TIMEOUT when none comes in time', async () => {
    const slow = new Slow();
    const { publisher } = await pair([new Add(), slow]);
    const handle = await publisher.publishWithResult('math.slow', {});
    await assert.rejects(
      handle.result(undefined as unknown as { timeoutMs: number }),
      (e: unknown) => e instanceof ConfigurationError,
    );
    await assert.rejects(handle.result({ timeoutMs: 0 }), ConfigurationError);
    await waitFor(() => slow.started === 1, { what: 'the slow job to start' });
    await assert.rejects(handle.result({ timeoutMs: 200 }), { code: 'RESULT_TIMEOUT' });
    slow.release();
  });

  it('rejects pending handles when the publisher loses its connection, and works after the reconnect', async () => {
    const slow = new Slow();
    const { namespace, publisher } = await pair([new Add(), slow], 'reslost');
    const handle = await publisher.publishWithResult('math.slow', {});
    await waitFor(() => slow.started === 1, { what: 'the slow job to start' });
    const waiting = handle.result({ timeoutMs: 15_000 }).then(
      () => assert.fail('should reject'),
      (e: unknown) => e,
    );
    const reconnected = nextEvent(publisher, 'connected', () => true, 15_000);
    assert.ok((await closeConnectionsNamed(`${namespace} publisher`)) >= 1);
    const lost = await waiting;
    assert.ok(lost instanceof JobResultError);
    assert.equal(lost.code, 'RESULT_LOST');
    slow.release();
    await reconnected;
    const again = await publisher.publishWithResult('math.add', { a: 20, b: 22 });
    assert.deepEqual(await again.result({ timeoutMs: 10_000 }), { sum: 42, attempt: 1 });
  });

  it('never answers into a queue a forged reply_to or warren-reply-to names', async () => {
    const add = new Add();
    const { worker } = await pair([add, new Slow()], 'resforged');
    const mathQueue = planOf(worker).jobs.get('math.add')!.queueName;
    const victim = planOf(worker).queues.find((q) => q.role === 'job' && q.key === 'victim')!.name;
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      const forged = [
        { replyTo: victim },
        // a direct reply-to address of no live channel: answered, and the broker drops it
        { replyTo: 'amq.rabbitmq.reply-to.g2dkAA1yYWJiaXRAbG9jYWxob3N0AAAA' },
        { headers: { 'warren-reply-to': victim } },
        // a retry of a forged job: warren-reply-to must survive the republish check too
        { replyTo: victim, body: { a: 1, b: 1, failTimes: 1 } },
      ];
      for (const [i, f] of forged.entries()) {
        channel.sendToQueue(mathQueue, Buffer.from(JSON.stringify(f.body ?? { a: i, b: 1 })), {
          type: 'math.add',
          messageId: `forged-${i}`,
          contentType: 'application/json',
          persistent: true,
          ...(f.replyTo ? { replyTo: f.replyTo } : {}),
          ...(f.headers ? { headers: f.headers } : {}),
        });
      }
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    await waitFor(() => add.attempts.size === 4 && add.attempts.get('forged-3') === 2, {
      what: 'every forged job to run',
    });
    // An answer would be published right after the ack; one round trip through the worker settles it.
    const probe = await worker.publishWithResult('math.add', { a: 0, b: 0 });
    await probe.result({ timeoutMs: 10_000 });
    assert.equal(await messageCount(victim), 0);
  });
});
