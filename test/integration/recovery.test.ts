import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, readJobDefinition, TopologyConflictError, type JobHandler } from '../../src';
import { planTopology, resolveTopologyOptions } from '../../src/topology';
import {
  cleanup,
  deletePlanEntities,
  rawConnection,
  testNamespace,
  testProfile,
  testWarren,
  closeConnectionsNamed,
} from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { work: {} } });

@Job('work.count', { queue: 'work', attempts: 1 })
class CountJob implements JobHandler<{ n: number }> {
  readonly seen = new Set<number>();
  async handle(data: { n: number }) {
    this.seen.add(data.n);
  }
}

describe('recovery', () => {
  afterEach(cleanup);

  it('resumes publishing and consuming after the broker force-closes the connection, losing no confirmed job', async () => {
    const namespace = testNamespace('reconnect');
    const counter = new CountJob();
    const warren = await testWarren({
      namespace,
      topology,
      handlers: [counter],
      connection: { connectionName: `warren-test ${namespace}` },
    });
    await warren.start();
    const confirmed: number[] = [];
    const failed: unknown[] = [];
    let n = 0;
    const publishing = (async () => {
      while (n < 400) {
        const i = n++;
        await warren.publish('work.count', { n: i }).then(
          () => confirmed.push(i),
          (error: unknown) => failed.push(error),
        );
      }
    })();
    await waitFor(() => confirmed.length > 50, { what: 'some confirmed publishes' });
    const reconnected = nextEvent(warren, 'connected', () => true, 15_000);
    assert.ok(
      (await closeConnectionsNamed(namespace)) >= 1,
      'the test connection should be found on the broker',
    );
    await reconnected;
    await publishing;
    assert.deepEqual(failed, []);
    await waitFor(() => confirmed.every((i) => counter.seen.has(i)), {
      timeoutMs: 15_000,
      what: 'every confirmed job to run',
    });
    assert.ok(warren.health().healthy);
  });

  it('re-opens a channel closed by a channel error and keeps the connection', async () => {
    const counter = new CountJob();
    const warren = await testWarren({ topology, handlers: [counter] });
    await warren.start();
    let disconnected = false;
    warren.on('disconnected', () => (disconnected = true));
    // a delete of the queue under the consumer makes the broker cancel it: warren re-declares and
    // re-subscribes
    const queue = planOf(warren).jobs.get('work.count')!.queueName;
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    await channel.deleteQueue(queue);
    await connection.close();
    // the queue is back once a publish to it is confirmed (mandatory: an unroutable one is rejected)
    await waitFor(
      () =>
        warren.publish('work.count', { n: 1 }).then(
          () => true,
          () => false,
        ),
      { what: 'the queue to be re-declared', timeoutMs: 10_000 },
    );
    await waitFor(() => counter.seen.has(1), { what: 'the job after re-subscribing' });
    assert.ok(warren.health().consumers.every((c) => c.consuming));
    assert.equal(disconnected, false);
  });

  it('reports a queue that exists with other arguments as a TopologyConflictError naming it, without crashing', async () => {
    const namespace = testNamespace('conflict');
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    await channel.assertQueue(`${namespace}.work`, {
      durable: true,
      arguments: { 'x-queue-type': 'classic' },
    });
    await connection.close();
    try {
      await assert.rejects(
        testWarren({ namespace, topology, handlers: [new CountJob()] }),
        (error: unknown) => {
          assert.ok(error instanceof TopologyConflictError);
          assert.equal(error.code, 'TOPOLOGY_CONFLICT');
          assert.equal(error.entityName, `${namespace}.work`);
          assert.equal(
            error.declared.arguments && (error.declared.arguments as Record<string, unknown>)['x-queue-type'],
            'quorum',
          );
          assert.match(error.brokerReply, /inequivalent arg/);
          assert.match(error.message, new RegExp(`queue '${namespace}.work'`));
          return true;
        },
      );
    } finally {
      // createWarren stopped at the conflict; delete what it declared before it, and the queue itself
      const profile = testProfile(namespace);
      const plan = planTopology({
        topology,
        jobs: [readJobDefinition(CountJob)],
        options: resolveTopologyOptions({ namespace, ...(profile.delay ? { delay: profile.delay } : {}) }),
      });
      await deletePlanEntities(plan);
    }
  });

  it('fails with a clear CONNECTION_FAILED naming the URL when no broker answers', async () => {
    const { createWarren, ConnectionError } = await import('../../src');
    await assert.rejects(
      createWarren({
        url: 'amqp://guest:secret@127.0.0.1:1',
        topology,
        connection: { connectTimeoutMs: 300 },
      }),
      (error: unknown) => {
        assert.ok(error instanceof ConnectionError);
        assert.equal(error.code, 'CONNECTION_FAILED');
        assert.match(error.message, /amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1/);
        assert.doesNotMatch(error.message, /secret/);
        return true;
      },
    );
  });
});
