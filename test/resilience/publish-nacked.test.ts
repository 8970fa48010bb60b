import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, PublishError, ShutdownError, type JobHandler } from '../../src';
import { createRecordingLogger } from '../../src/testing';
import { slowProxy } from '../support/slow-proxy';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { privateWarren, useSingleNode } from './private-warren';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 30_000;

/** A queue that holds one message and nacks every publish beyond it (classic reject-publish is exact). */
const topology = defineTopology({
  queues: { full: { type: 'classic', maxLength: 1, overflow: 'reject-publish' } },
});

@Job('full.job', { queue: 'full' })
class FullJob implements JobHandler<{ n: number }> {
  async handle() {}
}

describe('publishes the broker keeps nacking', () => {
  const node = useSingleNode();

  it('fails a publish nacked until its deadline with PUBLISH_NACKED instead of retrying it forever', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const warren = await privateWarren(node.url, {
      namespace: testNamespace('nacked'),
      topology,
      jobs: [FullJob],
    });
    await warren.publish(FullJob, { n: 1 });
    const started = Date.now();
    await assert.rejects(
      warren.publish(FullJob, { n: 2 }, { timeoutMs: 1_500 }),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_NACKED',
    );
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 1_400 && elapsed < 4_000, `failed at its deadline (${elapsed} ms)`);
  });

  it('fails a publish nacked until its deadline over a slow link with PUBLISH_NACKED, not PUBLISH_TIMEOUT', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    // once the instance is up, every answer of the broker takes 500 ms: the second nack comes ~1.05 s in, and
    // a copy sent again after it would still be in flight at the deadline, so a publish that was not stored
    // would fail as "may or may not have reached the broker"
    const proxy = await slowProxy(node.url, 0);
    try {
      const warren = await privateWarren(proxy.url, {
        namespace: testNamespace('nacked'),
        topology,
        jobs: [FullJob],
      });
      await warren.publish(FullJob, { n: 1 });
      proxy.setDelay(500);
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, (_, n) =>
          warren.publish(FullJob, { n: n + 2 }, { timeoutMs: 1_500 }).then(
            () => 'confirmed',
            (error: unknown) => (error instanceof PublishError ? error.code : String(error)),
          ),
        ),
      );
      assert.deepEqual(outcomes, Array(8).fill('PUBLISH_NACKED'));
      await warren.close({ graceMs: 200 });
    } finally {
      await proxy.close();
    }
  });

  it('fails a publish that is waiting out a nack backoff when the instance closes, instead of leaving it pending', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const { logger, entries } = createRecordingLogger('debug');
    const warren = await privateWarren(node.url, {
      namespace: testNamespace('nacked'),
      topology,
      jobs: [FullJob],
      logger,
    });
    await warren.publish(FullJob, { n: 1 });
    const nacked = warren.publish(FullJob, { n: 2 }, { timeoutMs: 60_000 });
    const outcome = nacked.then(
      () => 'confirmed',
      (error: unknown) => error,
    );
    await waitFor(() => entries.some((entry) => typeof entry.nacks === 'number' && entry.nacks >= 2), {
      what: 'the publish to be nacked twice',
    });
    const closing = Date.now();
    await warren.close({ graceMs: 200 });
    const error = await outcome;
    assert.ok(error instanceof ShutdownError, `rejected with SHUTTING_DOWN, got ${String(error)}`);
    assert.ok(Date.now() - closing < 5_000);
  });
});
