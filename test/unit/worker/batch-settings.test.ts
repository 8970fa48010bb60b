import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  defineJob,
  defineTopology,
  Job,
  type JobHandler,
  type JobOptions,
} from '../../../src';
import { runJob } from '../../../src/testing';
import { queueConcurrency, resolveWarrenConfig } from '../../../src/warren';

/** The batch options of a job, resolved and checked by createWarren's pure step (issue 36). */
const topology = defineTopology({ queues: { rows: {} } });
const insert = (options: Partial<JobOptions>) =>
  defineJob(
    'rows.insert',
    { queue: 'rows', batch: {}, ...options } as JobOptions & { batch: object },
    (jobs: readonly JobHandler.BatchJob[]) => jobs.length,
  );

function configOf(options: Partial<JobOptions>, jobDefaults = {}) {
  return resolveWarrenConfig({ topology, handlers: [insert(options)], jobDefaults });
}

function refusal(options: Partial<JobOptions>): string {
  try {
    configOf(options);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, `a ConfigurationError, got ${String(error)}`);
    return error.message;
  }
  return assert.fail('should have thrown');
}

describe('batch settings', () => {
  it('defaults to 100 jobs or 1 s, and the prefetch to two batches', () => {
    const config = configOf({ batch: {} });
    const job = config.jobs.get('rows.insert')!;
    assert.deepEqual(job.batch, { size: 100, timeoutMs: 1000 });
    assert.equal(queueConcurrency(config.jobs.values(), job.planned.queueName, config.jobDefaults), 200);
    const sized = configOf({ batch: { size: 10, timeoutMs: 50 }, concurrency: 30 });
    assert.equal(queueConcurrency(sized.jobs.values(), job.planned.queueName, sized.jobDefaults), 30);
  });

  it('refuses a prefetch below the size, bad sizes and waits, unknown keys and isolate', () => {
    assert.match(
      refusal({ batch: { size: 50 }, concurrency: 10 }),
      /concurrency \(the prefetch of queue 'rows', 10\) is below its batch\.size \(50\)/,
    );
    assert.match(refusal({ batch: { size: 1.5 } }), /batch\.size must be an integer >= 1 \(got 1\.5\)/);
    assert.match(refusal({ batch: { timeoutMs: 0 } }), /batch\.timeoutMs must be an integer >= 1 \(got 0\)/);
    assert.match(refusal({ batch: { max: 3 } as never }), /batch/);
    assert.match(refusal({ batch: 100 as never }), /batch must be \{ size, timeoutMs \}/);
    assert.match(
      refusal({ batch: {}, isolate: 'process', processor: __filename }),
      /sets both batch and isolate: an isolate runs one job at a time/,
    );
  });

  it('refuses a batch job on a queue with fairness, saying why', () => {
    const fair = defineTopology({ queues: { rows: { fairness: true } } });
    assert.throws(
      () => resolveWarrenConfig({ topology: fair, handlers: [insert({ batch: { size: 10 } })] }),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        /sets batch, and its queue 'rows' has fairness: fair share schedules deliveries across the lanes one job at a time/.test(
          error.message,
        ),
    );
    // the same job on a queue without fairness is fine
    assert.equal(configOf({ batch: { size: 10 } }).jobs.get('rows.insert')?.batch?.size, 10);
  });

  it('refuses a batch whose wait and run would outlive the consumer timeout, and counts the wait in it', () => {
    assert.match(
      refusal({ batch: { timeoutMs: 120_000 }, timeoutMs: 29 * 60_000 }),
      /below the broker's consumer_timeout/,
    );
  });

  it('needs handleBatch with batch, and tells a handleBatch without batch', () => {
    @Job('rows.plain', { queue: 'rows' })
    class Plain {
      handleBatch() {}
    }
    @Job('rows.batched', { queue: 'rows', batch: { size: 2 } })
    class Batched {
      handle() {}
    }
    assert.throws(() => resolveWarrenConfig({ topology, handlers: [new Plain()] }), /needs the batch option/);
    assert.throws(
      () => resolveWarrenConfig({ topology, handlers: [new Batched()] }),
      /needs a handleBatch\(jobs, ctx\) method/,
    );
  });

  it('runs a defined batch job as a batch of one for runJob: its result, or its failure', async () => {
    const job = defineJob(
      'rows.echo',
      { queue: 'rows', batch: { size: 10 } },
      (jobs: readonly JobHandler.BatchJob<{ n: number }>[]) => {
        for (const one of jobs) {
          if (one.data.n < 0) one.fail(new Error('negative'));
          else one.complete({ twice: one.data.n * 2 });
        }
      },
    );
    assert.deepEqual((await runJob(job, { n: 2 })).result, { twice: 4 });
    const failed = await runJob(job, { n: -1 });
    assert.equal((failed.error as Error | undefined)?.message, 'negative');
  });
});
