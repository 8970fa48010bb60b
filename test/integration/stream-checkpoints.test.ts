import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../../src';
import { cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { reports: {} } });
const FLOOD = 12_000;
const KEY = 'stream-checkpoints-test-key-0123456789abcdef';

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ n: number }> {
  readonly runs: string[] = [];
  handle(_data: { n: number }, ctx: JobContext) {
    this.runs.push(ctx.jobId);
  }
}

/** Appends records to a stream as a foreign publisher on the vhost would: plain amqplib, no proof. */
async function append(
  stream: string,
  count: number,
  body: (i: number) => Buffer,
  properties: { userId?: string } = {},
): Promise<void> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createConfirmChannel();
    for (let i = 0; i < count; i++) {
      channel.sendToQueue(stream, body(i), properties);
      if (i % 1000 === 999) await channel.waitForConfirms();
    }
    await channel.waitForConfirms();
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Publishes with a `user_id` that is not the connection's user: the channel error RabbitMQ answers. */
async function refusedPublish(queue: string, content: Buffer, userId: string): Promise<string> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createConfirmChannel();
    const closed = new Promise<string>((resolve) => channel.on('error', (e: Error) => resolve(e.message)));
    channel.sendToQueue(queue, content, { userId });
    return await closed;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** The checkpoints a stream holds, read as any client of the vhost can. */
async function checkpointsIn(stream: string): Promise<{ userId?: string; u: number; hasProof: boolean }[]> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createChannel();
    await channel.prefetch(100);
    const found: { userId?: string; u: number; hasProof: boolean }[] = [];
    let last = Date.now();
    await channel.consume(
      stream,
      (m) => {
        if (m === null) return;
        last = Date.now();
        const body = JSON.parse(m.content.toString()) as { u: number };
        found.push({
          userId: m.properties.userId,
          u: body.u,
          hasProof: m.properties.headers?.['warren-proof'] !== undefined,
        });
        channel.ack(m);
      },
      { arguments: { 'x-stream-offset': 'first' } },
    );
    await waitFor(() => Date.now() - last > 300, { what: 'the checkpoint stream read to its end' });
    return found;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

const malformed = (w: Warren<object>, role: 'job-control' | 'schedules') =>
  w.health().records.byRole[role]?.malformed ?? 0;

describe('checkpoints of the job-control stream and the schedule registry', () => {
  afterEach(cleanup);

  it('a process that read a flood writes a checkpoint; the next one starts there and still knows every decision', async () => {
    const namespace = testNamespace('ckpt');
    const first = await testWarren({ namespace, topology, jobs: [BuildReport] });
    const stream = `${namespace}.warren.job-control`;
    await first.delayed.cancel('before-the-flood');
    await append(stream, FLOOD, (i) => Buffer.from(`{"garbage":${i}}`));
    await first.delayed.cancel('after-the-flood');
    await waitFor(async () => (await checkpointsIn(`${stream}.checkpoints`)).length > 0, {
      what: 'a checkpoint written by the process that read the flood',
    });
    const [written] = await checkpointsIn(`${stream}.checkpoints`);
    assert.equal(written!.userId, 'guest', 'the broker vouches for its writer');
    assert.ok(written!.u > FLOOD);

    const handler = new BuildReport();
    const second = await testWarren({ namespace, topology, handlers: [handler] });
    await second.start();
    for (const jobId of ['before-the-flood', 'after-the-flood', 'kept'])
      await first.publish('report.build', { n: 1 }, { jobId, delayMs: 300 });
    await waitFor(() => handler.runs.includes('kept'), { what: 'the job nobody cancelled' });
    await waitFor(() => second.health().consumers.length > 0, { what: 'the worker' });
    assert.deepEqual(handler.runs, ['kept'], 'the decisions before and after the flood both hold');
    assert.equal(malformed(first, 'job-control'), FLOOD, 'the first process read every foreign record');
    assert.equal(malformed(second, 'job-control'), 0, 'the second started at the checkpoint');
  });

  it('a checkpoint the broker does not vouch for is not taken, whatever it claims', async () => {
    const namespace = testNamespace('ckpt-forged');
    const first = await testWarren({ namespace, topology, jobs: [BuildReport] });
    const stream = `${namespace}.warren.job-control`;
    await first.delayed.cancel('cancelled');
    await append(stream, 50, (i) => Buffer.from(`{"garbage":${i}}`));
    // a checkpoint claiming that nothing before offset 10^9 matters, without (then with another) user_id
    const forged = { v: 1, s: stream, u: 1e9, t: Date.now(), g: [], d: { d: [], c: [] } };
    await append(`${stream}.checkpoints`, 1, () => Buffer.from(JSON.stringify(forged)));
    const refused = await refusedPublish(
      `${stream}.checkpoints`,
      Buffer.from(JSON.stringify(forged)),
      'warren-app',
    );
    assert.match(
      refused,
      /PRECONDITION_FAILED - user_id property set to 'warren-app'/,
      'RabbitMQ refuses a user_id that is not the publisher’s own',
    );

    const handler = new BuildReport();
    const second = await testWarren({ namespace, topology, handlers: [handler] });
    await second.start();
    await first.publish('report.build', { n: 1 }, { jobId: 'cancelled', delayMs: 300 });
    await first.publish('report.build', { n: 1 }, { jobId: 'kept', delayMs: 300 });
    await waitFor(() => handler.runs.includes('kept'), { what: 'the job nobody cancelled' });
    assert.deepEqual(handler.runs, ['kept']);
    assert.equal(malformed(second, 'job-control'), 50, 'read from the first record');
  });

  it('with a signing key the checkpoint is signed, and one copied without its proof is not taken', async () => {
    const namespace = testNamespace('ckpt-key');
    const scheduling = {
      namespace,
      topology,
      handlers: [new BuildReport()],
      signingKey: KEY,
      scheduler: { enabled: true },
    };
    const first = await testWarren(scheduling);
    const stream = `${namespace}.warren.schedules`;
    await first.cron.add('report.build', '0 0 1 1 *', { n: 1 }, { id: 'yearly' });
    await append(stream, FLOOD, (i) => Buffer.from(`{"garbage":${i}}`));
    await first.start();
    await waitFor(async () => (await checkpointsIn(`${stream}.checkpoints`)).length > 0, {
      what: 'a registry checkpoint',
    });
    const [written] = await checkpointsIn(`${stream}.checkpoints`);
    assert.ok(written!.hasProof, 'signed');

    const second = await testWarren(scheduling);
    await second.start();
    assert.ok(
      second.cron.list().some((s) => s.id === 'yearly'),
      'the schedule from before the flood',
    );
    assert.equal(second.health().records.byRole.schedules?.unsigned ?? 0, 0, 'started at the checkpoint');

    // the same checkpoint body, appended again by a client without the key: never taken
    const forged = { v: 1, s: stream, u: 1e9, t: Date.now(), g: [], d: [] };
    await append(`${stream}.checkpoints`, 1, () => Buffer.from(JSON.stringify(forged)), { userId: 'guest' });
    const third = await testWarren(scheduling);
    await third.start();
    assert.ok(third.cron.list().some((s) => s.id === 'yearly'));
    assert.ok(
      (third.health().records.byRole.schedules?.unsigned ?? 0) >= FLOOD,
      'read from the first record',
    );
  });

  it('a checkpoint of a stream that was deleted since is noticed: the read starts again at the first record', async () => {
    const namespace = testNamespace('ckpt-stale');
    const first = await testWarren({ namespace, topology, jobs: [BuildReport] });
    const stream = `${namespace}.warren.job-control`;
    await append(stream, FLOOD, (i) => Buffer.from(`{"garbage":${i}}`));
    await first.delayed.cancel('old');
    await waitFor(async () => (await checkpointsIn(`${stream}.checkpoints`)).length > 0, {
      what: 'a checkpoint',
    });
    await first.close();
    const connection = await rawConnection();
    await (await connection.createChannel()).deleteQueue(stream);
    await connection.close();

    const handler = new BuildReport();
    const second = await testWarren({ namespace, topology, handlers: [handler] });
    await second.start();
    const publisher = await testWarren({ namespace, topology, jobs: [BuildReport] });
    await publisher.publish('report.build', { n: 1 }, { jobId: 'old', delayMs: 300 });
    await waitFor(() => handler.runs.includes('old'), {
      what: 'the job whose cancel went with the deleted stream',
    });
  });
});
