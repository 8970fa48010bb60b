import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, HEADERS, MAX_DELAY_MS, PublishError } from '../../../src';
import { planTopology, resolveTopologyOptions } from '../../../src/topology';
import { checkPublishOptions } from '../../../src/publisher/publish-checks';
import { buildPublish } from '../../../src/publisher/publish-message';

const plan = planTopology({
  topology: { queues: { mail: {}, reports: { maxPriority: 5 } } },
  jobs: [
    { name: 'mail.send', queue: 'mail' },
    { name: 'report.build', queue: 'reports', priority: 2 },
  ],
  options: resolveTopologyOptions({ namespace: 'app', delay: { levels: 4, unitMs: 100 } }),
});
const limits = { maxBodyBytes: 1_000, timeoutMs: 5_000 };
const mail = plan.jobs.get('mail.send')!;
const report = plan.jobs.get('report.build')!;
const now = 1_700_000_000_000;

function build(job = mail, options: Parameters<typeof buildPublish>[4] = {}, payload: unknown = { to: 'a' }) {
  return buildPublish(plan.delay, limits, job, payload, { jobId: 'j1', ...options }, now);
}

describe('buildPublish', () => {
  it('routes a plain job through its route, persistent and mandatory, at attempt 1', () => {
    const { message, published, delayMs } = build();
    assert.deepEqual(published, { jobId: 'j1', name: 'mail.send', queue: 'mail' });
    assert.equal(message.exchange, mail.route.exchange);
    assert.equal(message.routingKey, mail.route.routingKey);
    assert.equal(message.properties.type, 'mail.send');
    assert.equal(message.properties.messageId, 'j1');
    assert.equal(message.properties.persistent, true);
    assert.equal(message.properties.mandatory, true);
    assert.equal(message.properties.headers![HEADERS.attempt], 1);
    assert.equal(message.properties.headers![HEADERS.enqueuedAt], now);
    assert.equal(message.properties.headers![HEADERS.delayed], undefined);
    assert.equal(delayMs, 0);
    assert.deepEqual(JSON.parse(message.content.toString()), { to: 'a' });
  });

  it('gives a new job id when the call gives none', () => {
    const a = buildPublish(plan.delay, limits, mail, {}, {}, now);
    const b = buildPublish(plan.delay, limits, mail, {}, {}, now);
    assert.match(a.published.jobId, /^[0-9a-f-]{36}$/);
    assert.notEqual(a.published.jobId, b.published.jobId);
  });

  it("takes the call's priority over the job's, and the job's when the call has none", () => {
    assert.equal(build(report).message.properties.priority, 2);
    assert.equal(build(report, { priority: 4 }).message.properties.priority, 4);
    assert.equal(build(mail).message.properties.priority, undefined);
  });

  it("takes the call's timeoutMs over the publisher's for the confirm deadline", () => {
    assert.equal(build().message.deadline, now + 5_000);
    assert.equal(build(mail, { timeoutMs: 50 }).message.deadline, now + 50);
  });

  it('sets warren-max-attempts only when the call sets attempts', () => {
    assert.equal(build().message.properties.headers![HEADERS.maxAttempts], undefined);
    assert.equal(build(mail, { attempts: 2 }).message.properties.headers![HEADERS.maxAttempts], 2);
  });

  it('routes a delayed job through the delay levels with warren-delayed, runAt as well as delayMs', () => {
    const delayed = build(mail, { delayMs: 300 });
    assert.equal(delayed.delayMs, 300);
    assert.ok(delayed.message.exchange.includes('delay'), delayed.message.exchange);
    assert.ok(delayed.message.routingKey.endsWith(mail.queueName));
    assert.equal(delayed.message.properties.headers![HEADERS.delayed], now + 300);
    assert.equal(delayed.message.properties.headers![HEADERS.deliverAt], undefined);
    const at = build(mail, { runAt: new Date(now + 300) });
    assert.equal(at.message.routingKey, delayed.message.routingKey);
    assert.equal(at.message.properties.headers![HEADERS.delayed], now + 300);
  });

  it('treats a runAt in the past as now', () => {
    const past = build(mail, { runAt: new Date(now - 1_000) });
    assert.equal(past.delayMs, 0);
    assert.equal(past.message.exchange, mail.route.exchange);
  });

  it('carries the due time in warren-deliver-at past one pass through the levels', () => {
    const long = plan.delay.maxDelayMs + 1_000;
    const built = build(mail, { delayMs: long });
    assert.equal(built.message.properties.headers![HEADERS.deliverAt], now + long);
  });

  it('marks a deduplicated publish with warren-dedup', () => {
    assert.equal(build(mail, { deduplicate: true }).message.properties.headers![HEADERS.dedup], 1);
    assert.equal(build().message.properties.headers![HEADERS.dedup], undefined);
  });

  it('keeps user headers beside its own', () => {
    const built = build(mail, { headers: { tenant: 't1' } });
    assert.equal(built.message.properties.headers!.tenant, 't1');
  });

  it('refuses a delay over MAX_DELAY_MS and a body over maxBodyBytes', () => {
    assert.throws(() => build(mail, { delayMs: MAX_DELAY_MS + 1 }), ConfigurationError);
    assert.throws(
      () => build(mail, {}, 'x'.repeat(2_000)),
      (error: unknown) => error instanceof PublishError && error.code === 'PUBLISH_TOO_LARGE',
    );
  });
});

describe('checkPublishOptions', () => {
  const refuses = (options: Parameters<typeof checkPublishOptions>[1], pattern: RegExp, job = mail) =>
    assert.throws(
      () => checkPublishOptions(job, options),
      (error: unknown) => error instanceof ConfigurationError && pattern.test(error.message),
    );

  it('accepts the options of an ordinary publish', () => {
    checkPublishOptions(report, { jobId: 'a', delayMs: 10, attempts: 2, timeoutMs: 5, priority: 5 });
  });

  it('names the option, the rule and the value', () => {
    refuses({ jobId: '' }, /publish\('mail.send'\) jobId must be a string of 1 to 255 characters/);
    refuses({ delayMs: -1 }, /delayMs must be a finite number >= 0 \(got -1\)/);
    refuses({ runAt: new Date(Number.NaN) }, /runAt must be a valid Date/);
    refuses({ attempts: 0 }, /attempts must be an integer >= 1 \(got 0\)/);
    refuses({ timeoutMs: 1.5 }, /timeoutMs must be an integer >= 1/);
    refuses({ delayMs: 1, runAt: new Date() }, /give delayMs or runAt, not both/);
  });

  it('needs a queue with maxPriority for a priority, and keeps it in range', () => {
    refuses({ priority: 1 }, /priority needs a queue with maxPriority/);
    refuses({ priority: 6 }, /priority must be an integer from 0 to 5/, report);
  });

  it('needs a job id to deduplicate, and a job id and a delay to be controllable', () => {
    refuses({ deduplicate: true }, /deduplicate needs a jobId/);
    refuses({ jobId: 'a', deduplicate: { ttlMs: 0 } }, /deduplicate.ttlMs must be an integer >= 1/);
    refuses({ jobId: 'a', controllable: true }, /controllable needs a jobId and a delay/);
  });

  it("refuses headers in the broker's and warren's namespaces", () => {
    refuses({ headers: { 'x-death': 1 } }, /header 'x-death' is reserved/);
    refuses({ headers: { 'Warren-Attempt': 3 } }, /header 'Warren-Attempt' is reserved/);
  });

  it('names the batch index in a publishMany', () => {
    assert.throws(
      () => checkPublishOptions(mail, { attempts: 0 }, 3),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.batchIndex === 3 &&
        /publishMany job \[3\] \('mail.send'\)/.test(error.message),
    );
  });
});
