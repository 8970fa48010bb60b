import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChildWorkers, type ChildWorker } from '../fixtures/child-workers';
import { laneOf } from '../../src/message';
import { checkLedger } from '../fixtures/partition-ledger';
import { ledgerJob, partitionTopology, type PartitionWorkerMessage } from '../fixtures/partition-worker';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';

const TEST_TIMEOUT_MS = 290_000;
const PARTITIONS = 8;
const KEYS = 500;
/** 40 jobs per key: 20,000 in all, a key's next two rounds published after each of the 20 changes. */
const ROUNDS = 40;
const HEARTBEAT_MS = 200;
/** AMQP heartbeat of the workers: the broker drops a frozen one after about two of them. */
const AMQP_HEARTBEAT_S = 1;

type RunEvent = Extract<PartitionWorkerMessage, { kind: 'start' | 'end' | 'abort' }>;

/**
 * What a timed-out drain says: how many jobs are left, the first of them with their partition and their key's
 * last ledger events, and who owns each partition, so a stall can be told from a slow machine.
 */
function leftOver(
  events: readonly RunEvent[],
  jobs: ReadonlyMap<string, number>,
  workers: readonly ChildWorker<PartitionWorkerMessage>[],
  owned: ReadonlyMap<number, readonly number[]>,
): string {
  const { lost } = checkLedger(events, jobs);
  const first = lost.slice(0, 8).map((job) => {
    const key = job.split('#')[0]!;
    const last = events
      .filter((e) => e.key === key)
      .slice(-3)
      .map((e) => `${e.kind} ${e.seq}@${e.attempt} pid ${e.pid} ${(Date.now() - e.at).toFixed(0)} ms ago`);
    return `${job} (partition ${laneOf(key, PARTITIONS)}: ${last.join(', ') || 'never started'})`;
  });
  const owners = workers.map((w) => `${w.pid}: [${owned.get(w.pid)?.join(',') ?? ''}]`).join(' ');
  return `${lost.length} left: ${first.join('; ')}; owners ${owners}`;
}

type Change = 'join' | 'sigterm' | 'sigkill' | 'freeze-short' | 'freeze-long';

/**
 * The issue's churn test (docs/guide/ordered-partitions.md): 20,000 jobs over 500 keys, each carrying its key's
 * sequence number, while worker processes join and leave 20 times (SIGTERM, SIGKILL, and SIGSTOP then SIGCONT
 * after the partitions moved: a short freeze, shorter than the broker's heartbeat timeout, and a long one, after
 * the broker dropped the frozen connection). The ledger of starts and ends must show no job lost, no key's
 * jobs out of order and no two runs of one key at once; after each change every partition has one owner among
 * the running workers. It kills worker processes only, never a broker, so it runs on the broker under test: the
 * fault tier's private node (port 5690) is shared with every other fault run on the machine.
 */
const CHANGES: readonly Change[] = [
  'join',
  'sigterm',
  'join',
  'sigkill',
  'freeze-short',
  'join',
  'freeze-long',
  'sigterm',
  'join',
  'sigkill',
  'freeze-short',
  'join',
  'sigterm',
  'freeze-long',
  'join',
  'sigkill',
  'freeze-short',
  'join',
  'sigterm',
  'freeze-long',
];

describe('ordered partitions under churn (20,000 jobs, 500 keys, 20 joins and leaves)', () => {
  const workers = new ChildWorkers<PartitionWorkerMessage>('../fixtures/partition-worker');
  after(async () => {
    await workers.killAll();
    await cleanup();
  });

  it('loses nothing, reorders nothing, never runs two jobs of a key at once, and keeps every partition owned', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('churn');
    process.env.WARREN_PARTITION_AMQP_HEARTBEAT_S = String(AMQP_HEARTBEAT_S);
    const events: RunEvent[] = [];
    const owned = new Map<number, readonly number[]>();
    const frozen = new Set<number>();
    const publisher = await testWarren({
      namespace,
      topology: partitionTopology(PARTITIONS),
      handlers: [ledgerJob(1, 8, () => undefined)],
    });
    const pool: ChildWorker<PartitionWorkerMessage>[] = [];
    const spawn = () => {
      const worker = workers.fork([namespace, String(PARTITIONS), String(HEARTBEAT_MS), '1', '8']);
      worker.child.on('message', (m: PartitionWorkerMessage) => {
        if (m.kind === 'owned') owned.set(m.pid, m.owned);
        else if (m.kind !== 'ready') events.push(m);
      });
      pool.push(worker);
      return worker;
    };
    const running = () => pool.filter((w) => !frozen.has(w.pid));
    /** Every partition owned by exactly one running worker, none owning more than ⌈N/M⌉. */
    const settled = () => {
      const lists = running().map((w) => owned.get(w.pid) ?? []);
      const all = lists.flat().sort((a, b) => a - b);
      const most = Math.ceil(PARTITIONS / Math.max(1, lists.length));
      return (
        all.length === PARTITIONS && all.every((p, i) => p === i) && lists.every((l) => l.length <= most)
      );
    };
    const waitSettled = (what: string) =>
      waitFor(settled, {
        timeoutMs: 20_000,
        what: () =>
          `${what}: every partition owned once (${JSON.stringify(running().map((w) => [w.pid, owned.get(w.pid)]))})`,
      });

    for (let i = 0; i < 3; i++) spawn();
    await waitFor(() => pool.every((w) => w.messages.some((m) => m.kind === 'ready')), {
      timeoutMs: 30_000,
      what: 'three workers ready',
    });
    await waitSettled('start');

    let round = 0;
    const publishRounds = async (rounds: number) => {
      for (const end = round + rounds; round < end; round++)
        await Promise.all(
          Array.from({ length: KEYS }, (_, k) =>
            publisher.publish('ordered.step', { key: `key-${k}`, seq: round }),
          ),
        );
    };
    const pick = () => running()[Math.floor(Math.random() * running().length)]!;
    const leave = (worker: ChildWorker<PartitionWorkerMessage>) => {
      pool.splice(pool.indexOf(worker), 1);
      owned.delete(worker.pid);
    };
    const timeline: string[] = [];
    const changedAt: string[] = [];
    for (const [i, change] of CHANGES.entries()) {
      await publishRounds(ROUNDS / CHANGES.length);
      const startedAt = Date.now();
      changedAt.push(`${change} ${startedAt}`);
      if (change === 'join') {
        const worker = spawn();
        await waitFor(() => worker.messages.some((m) => m.kind === 'ready'), {
          timeoutMs: 30_000,
          what: 'a joiner',
        });
      } else if (change === 'sigterm' || change === 'sigkill') {
        const worker = pick();
        changedAt.push(`(pid ${worker.pid})`);
        worker.child.kill(change === 'sigterm' ? 'SIGTERM' : 'SIGKILL');
        await worker.exited;
        leave(worker);
      } else {
        const worker = pick();
        changedAt.push(`(pid ${worker.pid})`);
        worker.child.kill('SIGSTOP');
        frozen.add(worker.pid);
        await waitSettled(`change ${i} (${change}), while frozen`);
        // long: past the broker's heartbeat timeout, so the broker has dropped the frozen connection
        if (change === 'freeze-long') await passTime(AMQP_HEARTBEAT_S * 3_000);
        owned.delete(worker.pid);
        frozen.delete(worker.pid);
        worker.child.kill('SIGCONT');
        changedAt.push(`SIGCONT ${Date.now()}`);
      }
      await waitSettled(`change ${i} (${change})`);
      timeline.push(`${change} ${Date.now() - startedAt} ms (${running().length} workers)`);
      console.log(`churn change ${i}: ${timeline.at(-1)}`);
    }
    const jobs = new Map(Array.from({ length: KEYS }, (_, k) => [`key-${k}`, ROUNDS] as const));
    await waitFor(() => checkLedger(events, jobs).lost.length === 0, {
      timeoutMs: 120_000,
      what: () => `every job to complete (${leftOver(events, jobs, running(), owned)})`,
    });
    const report = checkLedger(events, jobs);
    console.log(
      `churn: ${report.completedRuns} completed runs, ${report.repeated} repeated (at-least-once), ${report.aborted} aborted; changes: ${timeline.join('; ')}`,
    );
    // what happened to the first key out of order, and when the changes were, for the failure message
    const firstKey = (report.reorderings[0] ?? report.overlaps[0])?.split(':')[0];
    if (firstKey !== undefined)
      console.log(
        `runs of ${firstKey}: ${events
          .filter((e) => e.key === firstKey)
          .map((e) => `${e.kind} ${e.seq}@${e.attempt} pid ${e.pid} ${e.at.toFixed(0)}`)
          .join('; ')}\nchanges at: ${changedAt.join(', ')}`,
      );
    assert.deepEqual(report.lost, []);
    assert.deepEqual(report.reorderings.slice(0, 10), []);
    assert.deepEqual(report.overlaps.slice(0, 10), []);
  });
});
