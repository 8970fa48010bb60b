import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as amqp from 'amqplib';
import { createRecordingLogger } from '../../src/testing';
import { checkLedger } from '../fixtures/partition-ledger';
import { ledgerJob, partitionTopology, type PartitionWorkerMessage } from '../fixtures/partition-worker';
import { cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';

/**
 * Ordered partitions and the other clients of the vhost (docs/guide/ordered-partitions.md): a plain amqplib
 * publisher that follows "Foreign publishers" gets per-key order, and one that does not gets a dead letter
 * with its reason; membership heartbeats are records of warren's codec, so with a signing key a plain
 * amqplib client that forges heartbeats and leaves on the members exchange, or replays genuine ones, changes
 * no ownership.
 */
const KEY = 'membership-test-key-of-at-least-32-characters';
const HEARTBEAT_MS = 100;

type Owner = Awaited<ReturnType<typeof testWarren>>;

const partitionsOf = (warren: Owner) =>
  warren.health().consumers.find((c) => c.queue === 'ordered')?.partitions;

/** Two warrens on one namespace, each owning two of four partitions. */
async function twoMembers(signingKey: string | undefined) {
  const namespace = testNamespace('members');
  const { logger, entries } = createRecordingLogger('warn');
  const make = () =>
    testWarren({
      namespace,
      topology: partitionTopology(4),
      handlers: [ledgerJob(1, 2, () => undefined)],
      worker: { partitionHeartbeatMs: HEARTBEAT_MS },
      logger,
      ...(signingKey !== undefined ? { signingKey } : {}),
    });
  const a = await make();
  const b = await make();
  await a.start();
  await b.start();
  const settled = () =>
    [a, b].every((w) => partitionsOf(w)?.owned.length === 2 && partitionsOf(w)?.members === 2);
  await waitFor(settled, {
    timeoutMs: 15_000,
    what: () => `two members owning two partitions each (${JSON.stringify([a, b].map(partitionsOf))})`,
  });
  return { namespace, a, b, entries, exchange: `${namespace}.warren.members.ordered` };
}

/**
 * What another user of the vhost sends for `forMs`: heartbeats of members that do not exist, leaves of the
 * real members, a beat with a made-up proof, and byte-for-byte replays of a genuine heartbeat it captured.
 */
async function forge(exchange: string, realMembers: readonly string[], forMs: number): Promise<number> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createChannel();
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.bindQueue(queue, exchange, '');
    const captured: amqp.ConsumeMessage[] = [];
    await channel.consume(queue, (m) => m && captured.push(m), { noAck: true });
    await waitFor(() => captured.length > 0, { what: 'a genuine heartbeat to capture' });
    const genuine = captured[0]!;
    const json = (value: unknown) => Buffer.from(JSON.stringify(value));
    let sent = 0;
    for (const until = Date.now() + forMs; Date.now() < until; ) {
      for (let i = 0; i < 3; i++)
        channel.publish(exchange, '', json({ member: `forged/${i}/000000`, kind: 'beat', sentAt: 0 }));
      for (const member of realMembers) {
        channel.publish(exchange, '', json({ member, kind: 'leave', sentAt: 0 }));
        channel.publish(exchange, '', json({ member, kind: 'beat', sentAt: 1e12 }));
      }
      channel.publish(exchange, '', json({ member: 'forged/9/000000', kind: 'beat', sentAt: 0 }), {
        headers: { 'warren-proof': `1.deadbeef.0123456789abcdef.1.${'A'.repeat(43)}` },
      });
      channel.publish(exchange, '', genuine.content, { headers: genuine.properties.headers });
      sent += 4 + 2 * realMembers.length;
      await passTime(HEARTBEAT_MS / 2);
    }
    return sent;
  } finally {
    await connection.close();
  }
}

/** Samples both members' partitions every 20 ms while `during` runs, and for 8 heartbeats after. */
async function watchOwnership(a: Owner, b: Owner, during: Promise<unknown>): Promise<Set<string>> {
  const seen = new Set<string>();
  let done = false;
  const sampling = (async () => {
    while (!done) {
      seen.add(JSON.stringify([a, b].map((w) => [partitionsOf(w)?.owned, partitionsOf(w)?.members])));
      await passTime(20);
    }
  })();
  await during;
  await passTime(8 * HEARTBEAT_MS);
  done = true;
  await sampling;
  return seen;
}

/** The docs' fnv1a32, written again here from the docs (not imported): what a foreign publisher computes. */
function fnv1a32(key: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(key, 'utf8')) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

describe('ordered partitions and foreign clients', () => {
  afterEach(cleanup);

  it("runs a plain amqplib publisher's jobs in per-key order, and dead-letters one without a key or in the wrong partition", async () => {
    type RunEvent = Extract<PartitionWorkerMessage, { kind: 'start' | 'end' | 'abort' }>;
    const events: RunEvent[] = [];
    const namespace = testNamespace('foreign');
    const warren = await testWarren({
      namespace,
      topology: partitionTopology(4),
      handlers: [
        ledgerJob(2, 4, (m) => {
          if (m.kind === 'start' || m.kind === 'end' || m.kind === 'abort') events.push(m);
        }),
      ],
    });
    const dead = new Map<string, string>();
    warren.on('deadLettered', (e) => dead.set(e.jobId, e.reason));
    await warren.start();
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      const send = (partition: number, id: string, body: unknown, headers: Record<string, unknown>) =>
        channel.publish('', `${namespace}.ordered.part-4.${partition}`, Buffer.from(JSON.stringify(body)), {
          type: 'ordered.step',
          messageId: id,
          contentType: 'application/json',
          deliveryMode: 2,
          headers,
        });
      const jobs = new Map<string, number>();
      for (let seq = 0; seq < 10; seq++)
        for (let k = 0; k < 12; k++) {
          const key = `acct-${k}`;
          send(fnv1a32(key) % 4, `${key}-${seq}`, { key, seq }, { 'warren-key': key });
          jobs.set(key, seq + 1);
        }
      send(0, 'no-key', { key: 'none', seq: 0 }, {});
      const key = 'acct-0';
      send((fnv1a32(key) + 1) % 4, 'elsewhere', { key, seq: 99 }, { 'warren-key': key });
      await channel.waitForConfirms();
      await waitFor(() => checkLedger(events, jobs).lost.length === 0 && dead.size === 2, {
        timeoutMs: 20_000,
        what: () =>
          `120 jobs to run and 2 to be dead-lettered (${checkLedger(events, jobs).lost.length} left, ${dead.size} dead)`,
      });
      const report = checkLedger(events, jobs);
      assert.deepEqual(report.reorderings, []);
      assert.deepEqual(report.overlaps, []);
      assert.equal(dead.get('no-key'), 'missing-key');
      assert.equal(dead.get('elsewhere'), 'wrong-partition');
      assert.ok(!events.some((e) => e.seq === 99 || e.key === 'none'), 'neither ran');
    } finally {
      await connection.close();
    }
  });

  it('with a signing key, forged, made-up and replayed heartbeats and leaves change no ownership, and are counted and logged', async () => {
    const { a, b, entries, exchange } = await twoMembers(KEY);
    const before = JSON.stringify([a, b].map((w) => [partitionsOf(w)?.owned, 2]));
    const members = [a, b].map((w) => partitionsOf(w)!.member);
    const seen = await watchOwnership(a, b, forge(exchange, members, 12 * HEARTBEAT_MS));
    assert.deepEqual([...seen], [before], 'ownership and membership never changed');
    const skipped = [a, b].map((w) => w.health().records.byRole['partition-members'] ?? {});
    for (const reasons of skipped) {
      assert.ok((reasons.unsigned ?? 0) > 10, `unsigned forgeries counted (${JSON.stringify(reasons)})`);
      assert.ok((reasons['unknown-key'] ?? 0) > 0, `a made-up proof counted (${JSON.stringify(reasons)})`);
      assert.ok((reasons.replayed ?? 0) > 0, `replays counted (${JSON.stringify(reasons)})`);
    }
    assert.ok(
      entries.some((e) => e.msg === 'skipped a record of partition-members that warren cannot trust'),
      'a warning names the skipped heartbeats',
    );
  });

  it('without a signing key, the same forgery takes partitions away: what the docs warn about', async () => {
    const { a, b, exchange } = await twoMembers(undefined);
    const members = [a, b].map((w) => partitionsOf(w)!.member);
    const seen = await watchOwnership(a, b, forge(exchange, members, 12 * HEARTBEAT_MS));
    assert.ok(seen.size > 1, 'unsigned heartbeats count as they are');
  });
});
