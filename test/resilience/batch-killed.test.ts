import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as amqp from 'amqplib';
import { planOf } from '../../src/warren';
import { BATCH_SIZE, batchFaultTopology, batchRows, type BatchWorkEvent } from '../fixtures/batch-fault-jobs';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { ForkedWorkers } from './forked-workers';
import { privateWarren, useSingleNode } from './private-warren';

type BatchLine = Extract<BatchWorkEvent, { event: 'batch' }>;

describe('a worker process killed mid-batch (SIGKILL)', () => {
  let workers: ForkedWorkers<BatchWorkEvent> | undefined;
  // registered first, so the worker processes die before the node's own cleanup runs
  after(async () => {
    await workers?.killAll();
  });
  const node = useSingleNode();

  it('redelivers every job of the batch it held, and each completes once, acked once, on another worker', {
    timeout: 120_000,
  }, async () => {
    const namespace = testNamespace('batch-kill');
    const batches: BatchLine[] = [];
    const forked = new ForkedWorkers<BatchWorkEvent>((event) => {
      if (event.event === 'batch') batches.push(event);
    });
    workers = forked;
    const rows = batchRows(() => undefined, false);
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: batchFaultTopology,
      jobs: [rows],
    });
    const fork = (hang: boolean) =>
      forked.fork({
        urls: [node.url],
        namespace,
        concurrency: 2 * BATCH_SIZE,
        env: { FAULT_JOB: 'batch', BATCH_HANG: hang ? '1' : '0' },
      });
    const victim = fork(true);
    await waitFor(() => victim.ready, { timeoutMs: 30_000, what: 'the worker to kill, ready' });

    const ids = Array.from({ length: BATCH_SIZE }, (_, i) => `row-${i}`);
    await publisher.publishMany(ids.map((id) => ({ job: rows, data: { id }, options: { jobId: id } })));
    const held = await waitFor(
      () => batches.find((b) => b.pid === victim.pid && b.ids.length === BATCH_SIZE),
      {
        timeoutMs: 20_000,
        what: 'the victim to start a full batch',
      },
    );
    assert.deepEqual(
      held.redelivered,
      ids.map(() => false),
    );
    victim.child.kill('SIGKILL');
    assert.equal((await victim.exited).signal, 'SIGKILL');

    const survivor = fork(false);
    await waitFor(() => survivor.done.size === BATCH_SIZE, {
      timeoutMs: 30_000,
      what: 'the batch to run again',
    });
    // a later job on the same queue: anything still to be redelivered (a lost or a second ack) comes before it
    await publisher.publish(rows, { id: 'row-last' }, { jobId: 'row-last' });
    await waitFor(() => survivor.done.has('row-last'), { timeoutMs: 30_000, what: 'the last job' });

    const again = batches.filter((b) => b.pid === survivor.pid);
    const rerun = again.flatMap((b) => b.ids.map((id, i) => ({ id, redelivered: b.redelivered[i] })));
    const first = rerun.filter((r) => r.id !== 'row-last');
    assert.deepEqual(
      first.map((r) => r.id).sort(),
      [...ids].sort(),
      'every job of the killed batch ran again, each once: no ack was lost and none came twice',
    );
    assert.ok(
      first.every((r) => r.redelivered),
      'each came back as a redelivery of the unacked message',
    );
    assert.equal(rerun.length, BATCH_SIZE + 1);
    assert.deepEqual(
      await queueDepth(
        node.url,
        planOf(publisher).queues.find((q) => q.role === 'job' && q.key === 'rows')!.name,
      ),
      0,
    );
  });
});

async function queueDepth(url: string, queue: string): Promise<number> {
  const connection = await amqp.connect(url);
  try {
    const channel = await connection.createChannel();
    return (await channel.checkQueue(queue)).messageCount;
  } finally {
    await connection.close();
  }
}
