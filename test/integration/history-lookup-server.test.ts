/**
 * Issue 33, item 4: a lookup server (`history.serveLookups`) answers `warren job <id>` for other processes
 * from memory (docs/operating/cli.md#a-lookup-server). The asker is another OS process (the CLI) or another
 * connection; what it shows is proven record by record as if read from the stream. A server or a reply of
 * another broker user is never taken, a request of another broker user is refused, and with no server a
 * lookup reads the streams without waiting for an answer. Timings are the bench's (`npm run bench --
 * lookup --served`), not asserted here beyond "did not wait for the timeout".
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import { defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { SERVED_LOOKUP_TIMEOUT_MS } from '../../src/history';
import { planOf } from '../../src/warren';
import { lookupQueueAssertion } from '../../src/topology';
import { configDir, runCli } from '../support/run-cli';
import { createBrokerUser, deleteBrokerUser, type BrokerUser } from '../support/broker-user';
import { BROKER_URL, cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { work: {} } });
const ran = new Set<string>();
const KEY = 'lookup-server-test-key-0123456789abcdef';

@Job('work.step', { queue: 'work', attempts: 1 })
class Step implements JobHandler<{ n: number }> {
  handle(_data: { n: number }, ctx: JobContext) {
    ran.add(ctx.jobId);
  }
}

const opened: WarrenOps[] = [];
const users: BrokerUser[] = [];
const connections: amqp.ChannelModel[] = [];

function worker(namespace: string, extra: { signingKey?: string } = {}) {
  return testWarren({ namespace, topology, handlers: [new Step()], history: { flushMs: 20 }, ...extra });
}

/** A process that only serves lookups (and writes no job of its own). */
function server(namespace: string, extra: { signingKey?: string } = {}) {
  return testWarren({ namespace, topology, history: { flushMs: 20, serveLookups: true }, ...extra });
}

function answered(w: Warren): number {
  return w.health().lookupServer?.answered ?? -1;
}

/** A history batch as any writer appends it, confirmed; no index-keys header (the server parses it). */
async function appendBatch(namespace: string, events: readonly Record<string, unknown>[]): Promise<void> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createConfirmChannel();
    const batch = { p: 'other-writer', h: 'elsewhere', pid: 1, e: events };
    channel.sendToQueue(`${namespace}.warren.history`, Buffer.from(JSON.stringify(batch)), {
      persistent: true,
    });
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}

async function jobByCli(namespace: string, jobId: string, extra: Record<string, unknown> = {}) {
  const run = await runCli(['job', jobId, '--json'], { cwd: configDir(namespace, extra) });
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as { state: string; events: { kind: string }[] };
}

/**
 * Another broker user on the lookup queue, as its active consumer (it came first): answers every request
 * with a batch claiming the job completed, as a reply of its own user or with no user at all.
 */
async function hostileServer(namespace: string, jobId: string, withUserId: boolean): Promise<() => number> {
  const hostile = await createBrokerUser('lookup-hostile');
  users.push(hostile);
  const connection = await amqp.connect(hostile.url);
  connections.push(connection);
  const channel = await connection.createChannel();
  const queue = `${namespace}.warren.history.lookups`;
  await channel.assertQueue(queue, lookupQueueAssertion());
  let requests = 0;
  await channel.consume(queue, (m) => {
    if (m === null) return;
    requests += 1;
    channel.ack(m);
    const batch = Buffer.from(
      JSON.stringify({
        p: 'x',
        h: 'x',
        pid: 1,
        e: [{ j: jobId, n: 'work.step', q: 'work', k: 'completed', t: Date.now(), a: 1, d: 1 }],
      }),
    );
    const meta = Buffer.from(JSON.stringify({ v: 1, s: 'ok', r: [{ o: 0, n: batch.length, h: {} }] }));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(meta.length);
    channel.sendToQueue(m.properties.replyTo, Buffer.concat([length, meta, batch]), {
      correlationId: m.properties.correlationId,
      ...(withUserId ? { userId: hostile.name } : {}),
    });
  });
  return () => requests;
}

describe('the lookup server (issue 33)', () => {
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close();
    for (const c of connections.splice(0)) await c.close().catch(() => undefined);
    for (const user of users.splice(0)) await deleteBrokerUser(user).catch(() => undefined);
    await cleanup();
  });

  it('answers warren job <id> in another process, with every event appended before it was asked', async () => {
    const namespace = testNamespace('hsrv');
    const w = await worker(namespace);
    await w.start();
    for (let n = 0; n < 20; n += 1) await w.publish('work.step', { n }, { jobId: `step-${n}` });
    await waitFor(() => ran.has('step-19') && ran.has('step-0'), { what: 'the 20 jobs to run' });
    const s = await server(namespace);
    await s.start();
    await waitFor(() => (s.health().lookupServer?.batches ?? 0) > 0, {
      what: 'the server to read the history',
    });
    const before = answered(s);
    const status = await jobByCli(namespace, 'step-7');
    assert.equal(status.state, 'completed');
    assert.deepEqual(
      status.events.map((e) => e.kind),
      ['published', 'started', 'completed'],
    );
    assert.equal(answered(s), before + 1, 'the server answered it');
    // a batch appended (and confirmed) by another writer right before the question is in the answer
    await appendBatch(namespace, [{ j: 'late-1', n: 'work.step', q: 'work', k: 'published', t: Date.now() }]);
    const late = await jobByCli(namespace, 'late-1');
    assert.equal(late.state, 'waiting');
    assert.equal(answered(s), before + 2);
    // a job nobody published is unknown, from the server too
    assert.equal((await jobByCli(namespace, 'never-published')).state, 'unknown');
    assert.equal(answered(s), before + 3);
  });

  it('with its server gone, a lookup reads the streams and does not wait for an answer', async () => {
    const namespace = testNamespace('hsrv');
    const w = await worker(namespace);
    await w.start();
    await w.publish('work.step', { n: 1 }, { jobId: 'alone' });
    await waitFor(() => ran.has('alone'), { what: 'the job to run' });
    const s = await server(namespace);
    await s.start();
    await s.close();
    const ops = createOps({ url: BROKER_URL, namespace, topology });
    opened.push(ops);
    await ops.queues();
    await waitFor(async () => (await ops.job('alone')).state === 'completed', {
      what: 'the job completed in the history',
      intervalMs: 100,
    });
    const started = Date.now();
    assert.equal((await ops.job('alone')).state, 'completed');
    assert.ok(Date.now() - started < SERVED_LOOKUP_TIMEOUT_MS, 'asked no server: the queue has no consumer');
  });

  for (const withUserId of [true, false]) {
    it(`takes no answer of another broker user's server (${withUserId ? 'its own user_id' : 'no user_id'}): the streams say what happened`, async () => {
      const namespace = testNamespace('hsrv');
      const w = await worker(namespace);
      await w.start();
      await w.publish('work.step', { n: 1 }, { jobId: 'target' });
      await waitFor(() => ran.has('target'), { what: 'the job to run' });
      // the job's real history: published, started, completed; the forged answer says only "completed"
      const requests = await hostileServer(namespace, 'target', withUserId);
      const s = await server(namespace); // stands by: the hostile consumer came first
      await s.start();
      const status = await jobByCli(namespace, 'target');
      assert.ok(requests() >= 1, 'the hostile server was asked');
      assert.deepEqual(
        status.events.map((e) => e.kind),
        ['published', 'started', 'completed'],
      );
      assert.equal(answered(s), 0);
    });
  }

  it('refuses a request of another broker user, and answers a signed one when the namespace has a key', async () => {
    const namespace = testNamespace('hsrv');
    const w = await worker(namespace, { signingKey: KEY });
    await w.start();
    await w.publish('work.step', { n: 1 }, { jobId: 'secret' });
    await waitFor(() => ran.has('secret'), { what: 'the job to run' });
    const s = await server(namespace, { signingKey: KEY });
    await s.start();
    await waitFor(() => (s.health().lookupServer?.batches ?? 0) > 0, {
      what: 'the server to read the history',
    });
    // another user asks, unsigned, with a reply address of its own
    const hostile = await createBrokerUser('lookup-asker');
    users.push(hostile);
    const connection = await amqp.connect(hostile.url);
    connections.push(connection);
    const channel = await connection.createChannel();
    const replies: Buffer[] = [];
    await channel.consume('amq.rabbitmq.reply-to', (m) => m && replies.push(m.content), { noAck: true });
    channel.sendToQueue(
      planOf(s).naming.historyLookups(),
      Buffer.from(JSON.stringify({ v: 1, j: 'secret', t: Date.now() })),
      { replyTo: 'amq.rabbitmq.reply-to', correlationId: randomUUID() },
    );
    await waitFor(() => replies.length === 1, { what: 'the refusal' });
    assert.match(replies[0]!.toString(), /"s":"refused"/);
    assert.doesNotMatch(replies[0]!.toString(), /secret/);
    // the CLI with the key is answered by the server
    const status = await jobByCli(namespace, 'secret', { signingKey: KEY });
    assert.equal(status.state, 'completed');
    assert.equal(answered(s), 1);
    assert.ok((s.health().records.byRole['lookup-request']?.unsigned ?? 0) >= 1, 'the refusal is counted');
  });
});
