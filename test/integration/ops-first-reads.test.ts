/**
 * ops' first reads of warren's streams on RabbitMQ 3.10, where a consumer of a stream that another connection
 * is still creating is refused (406) or loses its connection (541, docs/guide/topology.md): an operator's
 * first `warren dead`, `warren limits`, `warren schedules` or `warren job promote` (or the dashboard's) at the
 * moment a worker starting up declares the stream; a lost connection also fails the same process's other
 * reads under way. A read tries again while the stream starts, and ops reads once more on the next
 * connection. On 4.3 there is no race, and the test checks the same answers. (The history's lookups:
 * history-index.test.ts.)
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createOps, type WarrenOps } from '../../src/ops';
import { followStream } from '../../src/streams';
import { CHECKPOINT_RETENTION, planStream, requireStream, streamAssertion } from '../../src/topology';
import { deadLogOptions } from '../fixtures/dead-log-jobs';
import { inRounds } from '../support/rounds';
import { rawConnection, testNamespace } from '../support/test-broker';

describe('ops: first reads of a stream another connection creates', () => {
  const opened: WarrenOps[] = [];
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close().catch(() => undefined);
  });

  it("answers the dead-letter log's search, page, count and stats, the limits, the schedules and the delayed jobs, when another connection creates their streams at that moment", async (t) => {
    const namespaces = 24;
    const atOnce = 6;
    const connection = await rawConnection();
    const failures: string[] = [];
    let reads = 0;
    let raced = 0;
    const race = async () => {
      const namespace = testNamespace('dlrace');
      // one with the in-process index (the default), one reading the log's index stream (`scan`)
      const all = (['memory', 'scan'] as const).map((deadLetterIndex) =>
        createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 500, deadLetterIndex }),
      );
      opened.push(...all);
      const log = requireStream(all[0]!.plan, 'dead-letter-log');
      const index = all[0]!.plan.naming.deadLetterLogIndex();
      const limits = planStream('limits', undefined, all[0]!.plan.naming);
      const control = requireStream(all[0]!.plan, 'job-control');
      const schedules = (['schedules', 'schedules-checkpoints'] as const).map((kind) =>
        requireStream(all[0]!.plan, kind),
      );
      const racing = await rawConnection();
      const racer = await racing.createChannel();
      racer.on('error', () => undefined);
      // connected first (the queues' overview declares nothing), so that the reads declare as the racer does
      await Promise.all(all.map((ops) => ops.queues()));
      // the racer declares 0 to 20 ms after the reads start: the reads' own declares come first, and the
      // window in which 3.10 refuses or kills a consumer falls on their consumes in some of the races
      const lag = (raced++ % 6) * 4;
      const declared = sleep(lag).then(() =>
        Promise.allSettled([
          racer.assertQueue(log.name, log.assertion),
          racer.assertQueue(index, log.assertion),
          racer.assertQueue(limits.name, limits.assertion),
          ...schedules.map((stream) => racer.assertQueue(stream.name, stream.assertion)),
          racer.assertQueue(control.name, control.assertion),
        ]),
      );
      const [searchOps, otherOps] = all as [WarrenOps, WarrenOps];
      const labelled = (reads: Record<string, () => Promise<unknown>>) =>
        Promise.all(
          Object.entries(reads).map(([what, read]) =>
            read().then(
              () => undefined,
              (error: unknown) => `${what}: ${(error as Error).message}`,
            ),
          ),
        );
      const answers = await labelled({
        'dead.search': () => searchOps.dead.search({}).then((letters) => assert.deepEqual(letters, [])),
        'dead.page': () => otherOps.dead.page().then((page) => assert.deepEqual(page.letters, [])),
        'limits.list': () => otherOps.limits.list().then((overrides) => assert.deepEqual(overrides, [])),
        schedules: () => searchOps.schedules().then((found) => assert.deepEqual(found, [])),
        'delayed.dueNext': () => otherOps.delayed.dueNext().then((due) => assert.deepEqual(due, [])),
      });
      await declared;
      const after = await labelled({
        'dead.count': () => searchOps.dead.count({}).then((n) => assert.equal(n, 0)),
        'dead.stats': () => otherOps.dead.stats().then((stats) => assert.equal(stats.letters, 0)),
      });
      await racing.close().catch(() => undefined);
      for (const failure of [...answers, ...after]) {
        reads += 1;
        if (failure !== undefined) failures.push(failure);
      }
      for (const ops of all) await ops.close();
      const channel = await connection.createChannel();
      for (const name of [log.name, index, limits.name, control.name, ...schedules.map((s) => s.name)])
        await channel.deleteQueue(name);
      await channel.close();
    };
    try {
      await inRounds(namespaces, atOnce, race);
    } finally {
      await connection.close().catch(() => undefined);
    }
    t.diagnostic(`${reads} reads in ${namespaces} namespaces, ${failures.length} failed`);
    assert.deepEqual(failures, [], 'every read answered');
  });
  it('follows a stream it declared while another connection creates it: no consume is refused as still starting', async (t) => {
    // A worker follows the limits, schedule and job-control streams right after declaring them. 3.10 may
    // refuse the consume (406) or kill the connection (541): the first is waited out, the second is the
    // reconnect's (a worker's ready steps run again), so only the refusals count here.
    const args = streamAssertion(CHECKPOINT_RETENTION);
    const admin = await rawConnection();
    const refused: string[] = [];
    let followed = 0;
    let raced = 0;
    const race = async () => {
      const stream = `${testNamespace('frace')}.stream`;
      const [racing, follower] = [await rawConnection(), await rawConnection()];
      for (const c of [racing, follower]) c.on('error', () => undefined);
      const racer = await racing.createChannel();
      racer.on('error', () => undefined);
      const declared = sleep((raced++ % 6) * 2).then(() =>
        racer.assertQueue(stream, args).catch(() => undefined),
      );
      try {
        const channel = await follower.createChannel();
        channel.on('error', () => undefined);
        await channel.assertQueue(stream, args);
        await (
          await followStream(
            () => follower.createChannel(),
            stream,
            0,
            () => undefined,
          )
        ).close();
        followed += 1;
      } catch (error) {
        const message = String((error as Error).message);
        if (/does not have a replica on the local node/.test(message)) refused.push(message);
      }
      await declared;
      for (const c of [racing, follower]) await c.close().catch(() => undefined);
      const channel = await admin.createChannel();
      await channel.deleteQueue(stream);
      await channel.close();
    };
    try {
      await inRounds(48, 6, race);
    } finally {
      await admin.close().catch(() => undefined);
    }
    t.diagnostic(`48 followers, ${followed} followed, ${refused.length} refused as still starting`);
    assert.deepEqual(refused, [], 'no consume refused as still starting');
  });
});
