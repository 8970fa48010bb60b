import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, TopologyError, type JobDefinition } from '../../../src';
import {
  isStream,
  plannedStream,
  planTopology,
  requireStream,
  resolveTopologyOptions,
} from '../../../src/topology';

const options = resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } });

function plan(topology: Parameters<typeof defineTopology>[0], jobs: JobDefinition[] = []) {
  return planTopology({ topology, jobs, options });
}

describe('planTopology', () => {
  it('derives a parking queue and dead-letter exchange for every job queue, declared before it', () => {
    const p = plan({ queues: { email: {} } });
    const names = p.queues.map((q) => q.name);
    assert.ok(names.indexOf('app.email.dead') < names.indexOf('app.email'));
    const email = p.queues.find((q) => q.name === 'app.email')!;
    assert.ok(email.role === 'job');
    assert.equal(email.type, 'quorum');
    assert.equal(email.deadExchange, 'app.email.dlx');
    assert.equal(email.assertion.arguments['x-dead-letter-exchange'], 'app.email.dlx');
    assert.equal(email.assertion.arguments['x-delivery-limit'], 10);
    assert.ok(p.bindings.some((b) => b.source === 'app.email.dlx' && b.destination === 'app.email.dead'));
  });

  it('makes a queue with maxPriority alone classic: an upgrade never changes its type', () => {
    const p = plan({ queues: { reports: { maxPriority: 5 } } });
    const reports = p.queues.find((q) => q.name === 'app.reports')!;
    assert.equal(reports.type, 'classic');
    assert.equal(reports.assertion.arguments['x-max-priority'], 5);
  });

  it('plans quorum priorities only on an explicit type quorum, without x-max-priority', () => {
    const p = plan({ queues: { reports: { type: 'quorum', maxPriority: 9 } } });
    const reports = p.queues.find((q) => q.name === 'app.reports')!;
    assert.ok(reports.role === 'job');
    assert.equal(reports.type, 'quorum');
    assert.equal(reports.maxPriority, 9);
    assert.equal(reports.assertion.arguments['x-queue-type'], 'quorum');
    assert.equal('x-max-priority' in reports.assertion.arguments, false);
  });

  it('rejects a job bound to an unknown queue, naming the declared ones', () => {
    assert.throws(
      () => plan({ queues: { email: {} } }, [{ name: 'sms.send', queue: 'sms' }]),
      (error: unknown) =>
        error instanceof TopologyError &&
        /unknown queue 'sms'/.test(error.message) &&
        /email/.test(error.message),
    );
  });

  it('rejects two definitions of one job name with different settings, accepts identical ones', () => {
    const topology = { queues: { a: {}, b: {} } };
    assert.throws(
      () =>
        plan(topology, [
          { name: 'x.y', queue: 'a' },
          { name: 'x.y', queue: 'b' },
        ]),
      TopologyError,
    );
    assert.doesNotThrow(() =>
      plan(topology, [
        { name: 'x.y', queue: 'a' },
        { name: 'x.y', queue: 'a' },
      ]),
    );
  });

  it('rejects a binding to an undeclared exchange and raw arguments that contradict typed options', () => {
    assert.throws(() => plan({ queues: { q: { bind: { exchange: 'nope' } } } }), /unknown exchange 'nope'/);
    assert.throws(
      () => plan({ queues: { q: { type: 'classic', maxPriority: 3, arguments: { 'x-max-priority': 9 } } } }),
      /contradicts a typed option/,
    );
    assert.throws(() => plan({ queues: { q: { type: 'classic', deliveryLimit: 3 } } }), /quorum queues only/);
    assert.throws(
      () => plan({ queues: { q: { arguments: { 'x-queue-version': 2 } } } }),
      /q\.arguments\['x-queue-version'\] applies to classic queues only .*quorum queue/,
    );
    assert.doesNotThrow(() =>
      plan({ queues: { q: { type: 'classic', arguments: { 'x-queue-version': 2 } } } }),
    );
  });

  it('routes a job through the exchange whose binding matches its name, else straight to its queue', () => {
    const p = plan(
      {
        exchanges: { jobs: { type: 'topic' } },
        queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } }, other: {} },
      },
      [
        { name: 'email.welcome', queue: 'email' },
        { name: 'other.thing', queue: 'other' },
      ],
    );
    assert.deepEqual(p.jobs.get('email.welcome')!.route, {
      exchange: 'app.jobs',
      routingKey: 'email.welcome',
    });
    assert.deepEqual(p.jobs.get('other.thing')!.route, { exchange: '', routingKey: 'app.other' });
  });

  it('plans the delay levels: TTL 2^k units, each level dead-lettering into the next one down', () => {
    const p = plan({ queues: { email: {} } });
    const levels = p.queues.filter((q) => q.role === 'delay');
    assert.deepEqual(
      levels.map((q) => q.assertion.arguments['x-message-ttl']),
      [100, 200, 400, 800],
    );
    assert.equal(levels[0]!.assertion.arguments['x-dead-letter-exchange'], 'app.warren.delay.delivery');
    assert.equal(levels[3]!.assertion.arguments['x-dead-letter-exchange'], 'app.warren.delay.02');
    assert.equal(p.delay.maxDelayMs, 1500);
    assert.ok(
      p.bindings.some(
        (b) =>
          b.source === 'app.warren.delay.delivery' &&
          b.destination === 'app.email' &&
          b.pattern === '*.*.*.*.app.email',
      ),
    );
  });

  it('plans the streams it is given by kind: names from topology naming, retention as x-arguments, no x-expires', () => {
    const retention = { maxAgeMs: 90_500, maxBytes: 1000, segmentBytes: 100 };
    const p = planTopology({
      topology: { queues: { email: {} } },
      jobs: [],
      options: resolveTopologyOptions({ namespace: 'app', delay: { levels: 1 }, queueExpiresMs: 60_000 }),
      streams: { history: { retention }, schedules: {}, 'job-control': { retention } },
    });
    const streams = p.queues.filter(isStream);
    assert.deepEqual(
      streams.map((q) => `${q.stream} ${q.name}`),
      ['job-control app.warren.job-control', 'schedules app.warren.schedules', 'history app.warren.history'],
    );
    assert.equal(plannedStream(p, 'dead-letter-log'), undefined, 'a stream not given is not planned');
    assert.throws(() => requireStream(p, 'dead-letter-log'), TopologyError);
    const history = requireStream(p, 'history');
    assert.equal(history.type, 'stream');
    assert.deepEqual(history.retention, retention);
    assert.deepEqual(history.assertion, {
      durable: true,
      exclusive: false,
      autoDelete: false,
      arguments: {
        'x-queue-type': 'stream',
        'x-max-age': '91s',
        'x-max-length-bytes': 1000,
        'x-stream-max-segment-size-bytes': 100,
      },
    });
    assert.deepEqual(requireStream(p, 'schedules').assertion.arguments, { 'x-queue-type': 'stream' });
    assert.equal(plan({ queues: { email: {} } }).queues.filter(isStream).length, 0, 'none without streams');
  });

  it('returns a frozen plan', () => {
    const p = plan({ queues: { email: {} } });
    assert.ok(Object.isFrozen(p));
    assert.ok(Object.isFrozen(p.queues[0]));
  });

  it('plans in-place retries on a quorum queue only, with the same delay as both bounds', () => {
    const p = plan({ queues: { billing: { type: 'quorum', inPlaceRetryMs: 2000, deliveryLimit: 7 } } });
    const queue = p.queues.find((q) => q.role === 'job')!;
    assert.equal(queue.role === 'job' && queue.inPlaceRetryMs, 2000);
    assert.equal(queue.role === 'job' && queue.deliveryLimit, 7);
    assert.deepEqual(
      [
        queue.assertion.arguments['x-delayed-retry-type'],
        queue.assertion.arguments['x-delayed-retry-min'],
        queue.assertion.arguments['x-delayed-retry-max'],
      ],
      ['failed', 2000, 2000],
    );
    assert.throws(
      () => plan({ queues: { reports: { type: 'classic', inPlaceRetryMs: 2000 } } }),
      (e: unknown) => e instanceof TopologyError && /inPlaceRetryMs needs a quorum queue/.test(e.message),
    );
    assert.throws(
      () => plan({ queues: { billing: { inPlaceRetryMs: 0.5 } } }),
      (e: unknown) => e instanceof TopologyError && /positive whole number/.test(e.message),
    );
  });
});
