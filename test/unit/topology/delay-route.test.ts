import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { delayRoute, planTopology, resolveTopologyOptions, routeAfter } from '../../../src/topology';

const plan = planTopology({
  topology: { queues: { q: {} } },
  jobs: [],
  options: resolveTopologyOptions({ delay: { levels: 8, unitMs: 100 } }),
});

describe('delayRoute', () => {
  it('spells the delay in bits, most significant first, then the destination queue', () => {
    const route = delayRoute(plan.delay, 1300, 'q');
    assert.equal(route.routingKey, '0.0.0.0.1.1.0.1.q');
    // it enters at its highest set bit (level 3), skipping the levels that would only pass it down
    assert.equal(route.exchange, 'warren.delay.03');
    assert.equal(route.delayedMs, 1300);
    // a class instance, never an object literal V8 could pretenure (test/unit/worker/retry-copy-objects.test.ts)
    assert.notEqual(Object.getPrototypeOf(route), Object.prototype);
  });

  it('routes a copy after no delay straight to its queue, and after a delay as delayRoute does', () => {
    assert.deepEqual({ ...routeAfter(plan.delay, 0, 'q') }, { exchange: '', routingKey: 'q', delayedMs: 0 });
    assert.deepEqual({ ...routeAfter(plan.delay, -5, 'q') }, { exchange: '', routingKey: 'q', delayedMs: 0 });
    assert.deepEqual({ ...routeAfter(plan.delay, 1300, 'q') }, { ...delayRoute(plan.delay, 1300, 'q') });
    assert.notEqual(Object.getPrototypeOf(routeAfter(plan.delay, 0, 'q')), Object.prototype);
  });

  it('rounds up to the unit, never early', () => {
    assert.equal(delayRoute(plan.delay, 101, 'q').delayedMs, 200);
    assert.equal(delayRoute(plan.delay, 1, 'q').routingKey, '0.0.0.0.0.0.0.1.q');
  });

  it('caps one pass at the longest delay the levels hold', () => {
    const route = delayRoute(plan.delay, 10 * 60_000, 'q');
    assert.equal(route.delayedMs, 25_500);
    assert.equal(route.routingKey, '1.1.1.1.1.1.1.1.q');
  });

  it('handles more levels than 32-bit shifts allow', () => {
    const wide = planTopology({
      topology: {},
      jobs: [],
      options: resolveTopologyOptions({ delay: { levels: 36, unitMs: 1 } }),
    });
    const route = delayRoute(wide.delay, 2 ** 33 + 1, 'q');
    assert.equal(route.routingKey.split('.').filter((b) => b === '1').length, 2);
    assert.equal(route.delayedMs, 2 ** 33 + 1);
  });

  it('sends a delay to a queue that has a hold of that length through it, and every other delay through the levels', () => {
    const withHolds = planTopology({
      topology: { queues: { q: {}, r: {}, c: { type: 'classic' } } },
      jobs: [],
      options: resolveTopologyOptions({ namespace: 'app', delay: { levels: 8, unitMs: 100 } }),
      holds: [
        { queue: 'q', delayMs: 1000 },
        { queue: 'q', delayMs: 250 },
        { queue: 'q', delayMs: 1000 },
        { queue: 'q', delayMs: 0 },
        { queue: 'q', delayMs: 1.5 },
        { queue: 'q', delayMs: 10 * 60_000 },
        { queue: 'nope', delayMs: 1000 },
        { queue: 'c', delayMs: 1000 },
      ],
    });
    // kept once each; a non-positive, fractional or past-the-levels delay, or an undeclared queue, gets none
    assert.deepEqual(
      withHolds.delay.holds.map((h) => [h.name, h.ttlMs, h.queueName]),
      [
        ['app.warren.delay.hold.c.1000ms', 1000, 'app.c'],
        ['app.warren.delay.hold.q.1000ms', 1000, 'app.q'],
        ['app.warren.delay.hold.q.250ms', 250, 'app.q'],
      ],
    );
    // one hop, through the default exchange, like raw amqplib's TTL queue
    assert.deepEqual(
      { ...delayRoute(withHolds.delay, 1000, 'app.q') },
      {
        exchange: '',
        routingKey: 'app.warren.delay.hold.q.1000ms',
        delayedMs: 1000,
      },
    );
    // 250 is not a multiple of the unit: the hold is exact where the levels would round up to 300
    assert.equal(delayRoute(withHolds.delay, 250, 'app.q').delayedMs, 250);
    assert.equal(delayRoute(withHolds.delay, 1100, 'app.q').exchange, 'app.warren.delay.03');
    // queue r has no hold of its own
    assert.equal(delayRoute(withHolds.delay, 1000, 'app.r').exchange, 'app.warren.delay.03');
    const hold = withHolds.queues.find((queue) => queue.name === 'app.warren.delay.hold.q.1000ms')!;
    assert.equal(hold.role, 'delay');
    assert.equal(hold.assertion.arguments['x-message-ttl'], 1000);
    assert.equal(hold.assertion.arguments['x-dead-letter-exchange'], '');
    assert.equal(hold.assertion.arguments['x-dead-letter-routing-key'], 'app.q');
    // a hold has its job queue's type: quorum (at-least-once dead-lettering) here, classic for queue c
    assert.equal(hold.type, 'quorum');
    assert.equal(hold.assertion.arguments['x-dead-letter-strategy'], 'at-least-once');
    const classicHold = withHolds.queues.find((queue) => queue.name === 'app.warren.delay.hold.c.1000ms')!;
    assert.equal(classicHold.type, 'classic');
    assert.equal(classicHold.assertion.arguments['x-queue-type'], 'classic');
  });
});
