/**
 * Removing a namespace deletes the streams the dashboard's graphs read (the aggregates, their hours and
 * days, the marks) and the lookup index and its checkpoints beside the history, even when the configuration that removes it
 * has no `aggregates`: each checked on the broker by a passive declare, before and after.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createOps, type WarrenOps } from '../../src/ops';
import { removalAppOptions } from '../fixtures/namespace-worker';
import { cleanup, presentQueues as present, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const opened: WarrenOps[] = [];

describe('removing a namespace with graphs', () => {
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close().catch(() => undefined);
    await cleanup();
  });

  it('deletes the aggregates, hours, days and marks streams and the history index, by a configuration without aggregates', async () => {
    const namespace = testNamespace('rmgraphs');
    const graphs = { ...removalAppOptions(namespace), aggregates: { bucketMs: 1000 } };
    const worker = await testWarren(graphs);
    const withGraphs = createOps(graphs);
    opened.push(withGraphs);
    await withGraphs.mark({ kind: 'deploy', note: 'before the removal' });
    // the writer's first append starts the background indexing, which declares the index and its checkpoints
    await worker.publish('work.tick', {});
    const streams = [
      'aggregates',
      'aggregates.hours',
      'aggregates.days',
      'marks',
      'history',
      'history.index',
      'history.checkpoints',
    ].map((name) => `${namespace}.warren.${name}`);
    await waitFor(async () => (await present(streams)).length === streams.length, {
      what: 'every stream (the history index after the first indexing round)',
    });
    await worker.close();

    // the remover's configuration has neither aggregates nor marks
    const remover = createOps(removalAppOptions(namespace));
    opened.push(remover);
    const result = await remover.removeNamespace({ force: true, timeoutMs: 30_000, replyTimeoutMs: 3000 });
    assert.deepEqual(result.stopped, []);
    assert.deepEqual(await present(streams), [], 'none is left');
    assert.deepEqual(await present(remover.plan.queues.map((q) => q.name)), [], 'nor the job queues');
  });
});
