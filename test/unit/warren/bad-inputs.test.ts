import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { ConfigurationError, TopologyError, WarrenError, type Logger } from '../../../src';
import { resolveSubscribeOptions } from '../../../src/job-events/options';
import { checkLimitTarget } from '../../../src/limit-overrides';
import { checkBatchEntry, checkPublishOptions } from '../../../src/publisher/publish-checks';
import { planTopology, resolveTopologyOptions, type TopologyDeclaration } from '../../../src/topology';
import { rescheduleAt } from '../../../src/warren';
import { emitToEach, refuseUnknownEvents } from '../../../src/warren/event-sink';
import { jobNameOf } from '../../../src/warren/warren-jobs';

const options = resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } });

function plan(topology: TopologyDeclaration, jobs: readonly object[] = []) {
  return planTopology({ topology, jobs: jobs as never, options });
}

const isConfiguration = (words: RegExp) => (error: unknown) =>
  error instanceof ConfigurationError && words.test(error.message);

describe('reschedule: the new due time', () => {
  it('is whole milliseconds, rounded up: a fractional delay would make every reader drop the record', () => {
    for (const delayMs of [0.4, 1.5, 100.5]) {
      const before = Date.now();
      const at = rescheduleAt('j', { delayMs });
      assert.ok(Number.isSafeInteger(at), `${delayMs} -> ${at}`);
      assert.ok(at >= before + delayMs && at <= Date.now() + delayMs + 1);
    }
    const runAt = new Date(Date.now() + 60_000);
    assert.equal(rescheduleAt('j', { runAt }), runAt.getTime());
  });

  it('refuses what publish refuses, with a ConfigurationError naming the call', () => {
    const cases: [unknown, RegExp][] = [
      [undefined, /reschedule\('j'\) needs \{ runAt: Date \} or \{ delayMs: number \}/],
      [{}, /needs \{ runAt: Date \} or \{ delayMs: number \}/],
      ['soon', /reschedule\('j'\) must be an object/],
      [{ runAt: '2030-01-01' }, /runAt must be a valid Date \(got '2030-01-01'\)/],
      [{ runAt: new Date(Number.NaN) }, /runAt must be a valid Date \(got Invalid Date\)/],
      [{ delayMs: -1 }, /delayMs must be a finite number >= 0 \(got -1\)/],
      [{ delayMs: Number.POSITIVE_INFINITY }, /delayMs must be a finite number >= 0 \(got Infinity\)/],
      [{ delayMs: '100' }, /delayMs must be a finite number >= 0/],
      [{ delayMs: 200, runAt: new Date() }, /give delayMs or runAt, not both/],
      [{ delay: 100 }, /reschedule\('j'\)\.delay is not an option \(known: runAt, delayMs\)/],
      [{ delayMs: 400 * 86_400_000 }, /must be at most 366 days/],
    ];
    for (const [input, words] of cases)
      assert.throws(() => rescheduleAt('j', input as never), isConfiguration(words), String(words));
  });
});

describe('publish options and publishMany entries from plain JavaScript', () => {
  const planned = plan({ queues: { email: {} } }, [{ name: 'email.welcome', queue: 'email' }]);
  const job = planned.jobs.get('email.welcome')!;

  it('refuses a key PublishOptions does not have, and options that are not an object', () => {
    assert.throws(
      () => checkPublishOptions(job, { delay: 5000 } as never),
      isConfiguration(/^publish\('email.welcome'\) options.delay is not an option \(known: jobId, priority/),
    );
    assert.throws(
      () => checkPublishOptions(job, { timeout: 100 } as never, 3),
      (error: unknown) =>
        isConfiguration(/^publishMany job \[3\] \('email.welcome'\) options.timeout is not an option/)(
          error,
        ) && (error as ConfigurationError).batchIndex === 3,
    );
    for (const bad of ['x', null, [1]])
      assert.throws(
        () => checkPublishOptions(job, bad as never),
        isConfiguration(/options must be an object/),
      );
    checkPublishOptions(job, {});
    checkPublishOptions(job, { jobId: 'a', delayMs: 10, headers: { h: 1 } });
  });

  it('names the entry of a publishMany call that is not { job, data, options? }', () => {
    for (const bad of [null, 'nope', {}, { job: 42 }, { data: {} }])
      assert.throws(
        () => checkBatchEntry(bad as never, 2),
        (error: unknown) =>
          isConfiguration(/^publishMany job \[2\] must be \{ job, data, options\? \}/)(error) &&
          (error as ConfigurationError).batchIndex === 2,
      );
    const entry = { job: 'email.welcome', data: {} };
    assert.equal(checkBatchEntry(entry, 0), entry);
  });

  it('says what a job must be when it is neither a name nor a job (a job imported under the wrong name)', () => {
    for (const bad of [undefined, null, 42, true])
      assert.throws(
        () => jobNameOf(bad as never),
        isConfiguration(/^the job must be a job name, a @Job class or a defineJob job/),
      );
    assert.throws(() => jobNameOf({} as never), isConfiguration(/is not a job handler/));
    assert.equal(jobNameOf('email.welcome'), 'email.welcome');
  });
});

describe('topology declarations: a typo is refused, not planned as if absent', () => {
  const refuses = (topology: unknown, words: RegExp) =>
    assert.throws(
      () => plan(topology as TopologyDeclaration),
      (error: unknown) => error instanceof TopologyError && words.test(error.message),
      String(words),
    );

  it('at every level: the topology, a queue, its binding, fairness, partitions, an exchange, an exchange binding', () => {
    refuses({ queue: {} }, /^topology.queue is not an option \(known: exchanges, queues, exchangeBindings\)/);
    refuses(
      { queues: { r: { maxPriorty: 5 } } },
      /^topology.queues.r.maxPriorty is not an option \(known: type, maxPriority/,
    );
    refuses({ queues: { r: { fairnes: true } } }, /^topology.queues.r.fairnes is not an option/);
    refuses({ queues: { r: 'classic' } }, /^topology.queues.r must be an object/);
    refuses(
      { queues: { r: { fairness: { lanes: 4, weight: { a: 3 } } } } },
      /^topology.queues.r.fairness.weight is not an option \(known: lanes, previousLanes, weights\)/,
    );
    refuses(
      { queues: { r: { partitions: { count: 4, bogus: 1 } } } },
      /^topology.queues.r.partitions.bogus is not an option \(known: count, previous, order\)/,
    );
    refuses(
      { exchanges: { jobs: { type: 'topic' } }, queues: { r: { bind: { exchange: 'jobs', patern: '#' } } } },
      /^topology.queues.r.bind.patern is not an option \(known: exchange, pattern, arguments\)/,
    );
    refuses(
      {
        exchanges: { jobs: { type: 'topic' } },
        queues: { r: { bind: [{ exchange: 'jobs' }, { exchange: 'jobs', key: 'a' }] } },
      },
      /^topology.queues.r.bind\[1\].key is not an option/,
    );
    refuses(
      { exchanges: { jobs: { type: 'topic', durible: true } } },
      /^topology.exchanges.jobs.durible is not an option/,
    );
    refuses(
      {
        exchanges: { a: { type: 'topic' }, b: { type: 'topic' } },
        exchangeBindings: [{ from: 'a', to: 'b', routingKey: '#' }],
      },
      /^topology.exchangeBindings\[0\].routingKey is not an option \(known: from, to, pattern, arguments\)/,
    );
  });

  it('plans every documented key as before', () => {
    plan({
      exchanges: { jobs: { type: 'topic', durable: true, arguments: {} } },
      queues: {
        a: { bind: { exchange: 'jobs', pattern: 'a.*' }, fairness: { lanes: 4, weights: { k: 2 } } },
        b: { partitions: { count: 4, order: 'none' }, deliveryLimit: 5, messageTtlMs: 1000 },
        c: { type: 'classic', maxPriority: 5, maxLength: 10, overflow: 'reject-publish' },
      },
    });
  });
});

describe('ops.limits.set: targets the planned jobs have', () => {
  const jobs = plan({ queues: { api: { partitions: { count: 4, order: 'none' } } } }, [
    { name: 'api.call', queue: 'api', perKeyConcurrency: 2, key: (d: { a: string }) => d.a },
    { name: 'api.sync', queue: 'api', limiter: { max: 10, durationMs: 1000, per: 'key' } },
  ]).jobs;
  const refuses = (input: object, words: RegExp) =>
    assert.throws(
      () => checkLimitTarget(jobs.values(), input as never),
      (error: unknown) =>
        error instanceof WarrenError && error.code === 'LIMIT_INVALID' && words.test(error.message),
      String(words),
    );

  it('refuses a job without perKeyConcurrency and a name that is no per-key rate limit, listing the ones there are', () => {
    refuses(
      { target: 'nope', key: 'c', concurrency: 2 },
      /'nope' is not a job with perKeyConcurrency \(known: api.call\)/,
    );
    refuses({ target: 'api.sync', key: 'c', concurrency: 2 }, /is not a job with perKeyConcurrency/);
    refuses(
      { target: 'api.call', key: 'c', max: 2 },
      /'api.call' is not a per-key rate limit \(known: api.sync\)/,
    );
    checkLimitTarget(jobs.values(), { target: 'api.call', key: 'c', concurrency: 3 });
    checkLimitTarget(jobs.values(), { target: 'api.sync', key: 'c', max: null });
  });

  it('checks nothing when the caller planned no jobs (an ops made with a namespace only)', () => {
    checkLimitTarget([], { target: 'anything', key: 'c', concurrency: 2 });
  });
});

describe('subscribe options', () => {
  it('refuses a key it does not know', () => {
    assert.throws(
      () => resolveSubscribeOptions({ bogus: 1 } as never),
      isConfiguration(/^subscribe options.bogus is not an option \(known: maxLength\)/),
    );
    assert.equal(resolveSubscribeOptions({ maxLength: 5 }).maxLength, 5);
  });
});

describe('event listeners', () => {
  function recordingLog(): { log: Logger; lines: string[] } {
    const lines: string[] = [];
    const log = { error: (_: object, message: string) => lines.push(message) } as unknown as Logger;
    return { log, lines };
  }

  it('one that throws or rejects is logged, and the listeners after it still run', async () => {
    const emitter = new EventEmitter();
    const { log, lines } = recordingLog();
    const heard: number[] = [];
    emitter.on('completed', () => {
      throw new Error('sync');
    });
    emitter.on('completed', async () => {
      throw new Error('async');
    });
    emitter.once('completed', (n: number) => heard.push(n));
    emitter.on('completed', (n: number) => heard.push(n * 10));
    emitToEach(emitter, 'completed', [1], log);
    emitToEach(emitter, 'completed', [2], log);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(heard, [1, 10, 20]);
    assert.deepEqual(lines.sort(), [
      'an event listener rejected; ignored',
      'an event listener rejected; ignored',
      'an event listener threw; ignored',
      'an event listener threw; ignored',
    ]);
  });

  it("refuses a listener for a name that is not one of warren's events", async () => {
    const emitter = new EventEmitter();
    refuseUnknownEvents(emitter);
    assert.throws(
      () => emitter.on('complete', () => undefined),
      isConfiguration(
        /^'complete' is not a warren event, so a listener would never be called \(events: published, started/,
      ),
    );
    assert.equal(emitter.listenerCount('complete'), 0);
    emitter.on('completed', () => undefined);
    emitter.once('deadLettered', () => undefined);
    emitter.on('newListener', () => undefined);
    emitter.on('error', () => undefined); // events.once(emitter, name) and events.on listen to it too
    const waiting = once(emitter, 'completed');
    emitter.on(Symbol('own'), () => undefined);
    assert.equal(emitter.listenerCount('completed'), 2);
    emitter.emit('completed');
    await waiting;
  });
});
