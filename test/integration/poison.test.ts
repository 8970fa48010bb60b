import { fork } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobHandler } from '../../src';
import { brokerUnderTest } from '../support/broker-under-test';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

@Job('poison.crash', { queue: 'poison' })
class CrashJob implements JobHandler<object> {
  async handle() {}
}

/**
 * Runs the crash worker until it stops crashing because the job is gone (dead-lettered); returns how often
 * the job started.
 */
async function runCrashLoop(
  namespace: string,
  queueType: string,
  limit: number,
  isDeadLettered: () => Promise<boolean>,
): Promise<number> {
  let runs = 0;
  for (let round = 0; round < limit + 5; round++) {
    const child = fork(join(__dirname, '../fixtures/crash-worker.js'), [], {
      env: { ...process.env, NAMESPACE: namespace, QUEUE_TYPE: queueType, LIMIT: String(limit) },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let exited = false;
    // 'close', not 'exit': by then all of the child's output has been read, every 'running' line counted.
    const exit = new Promise<number | null>((resolve) =>
      child.on('close', (code) => {
        exited = true;
        resolve(code);
      }),
    );
    // Either this worker crashes on the job, or the job is in dead letters and nothing is left to crash on.
    const outcome = await waitFor(
      async () => {
        if (exited) return 'crashed';
        return output.includes('started') && (await isDeadLettered()) ? 'dead-lettered' : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the worker to crash or the job to be dead-lettered' },
    );
    if (outcome === 'dead-lettered') child.kill('SIGKILL');
    await exit;
    runs += (output.match(/running/g) ?? []).length;
    if (outcome === 'dead-lettered') return runs;
  }
  throw new Error(`still crashing after ${limit + 5} worker processes`);
}

for (const queueType of ['quorum', 'classic'] as const) {
  describe(`a job that crashes the worker process on ${queueType} queues`, () => {
    afterEach(cleanup);

    it('ends in dead letters after a bounded number of deliveries', async () => {
      const namespace = testNamespace(`poison-${queueType}`);
      const limit = 3;
      const topology = defineTopology({ queues: { poison: { type: queueType } } });
      const warren = await testWarren({
        namespace,
        topology,
        jobs: [CrashJob],
        queues: { deliveryLimit: limit },
        worker: { redeliveryLimit: limit },
      });
      await warren.publish(CrashJob, {}, { jobId: `crash-${queueType}` });
      const runs = await runCrashLoop(
        namespace,
        queueType,
        limit,
        async () => (await warren.deadLetters.count('poison')) > 0,
      );
      // RabbitMQ 4.x counts a delivery returned by a lost connection towards x-delivery-limit too (its
      // x-acquired-count counts every one): the crash loop ends on both versions.
      const broker = await brokerUnderTest();
      console.log(
        `# crash loop on ${queueType}, RabbitMQ ${broker.version}: ${runs} runs before the dead letter`,
      );
      assert.ok(runs >= 1 && runs <= limit + 1, `the job ran ${runs} times`);
      const letters = await waitFor(
        async () => {
          const list = await warren.deadLetters.list('poison');
          return list.length === 1 ? list : undefined;
        },
        { what: 'the dead letter' },
      );
      assert.equal(letters[0]!.jobId, `crash-${queueType}`);
      assert.equal(letters[0]!.reason, 'delivery-limit');
    });
  });
}
