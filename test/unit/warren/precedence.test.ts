import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  defineTopology,
  Job,
  JOB_DEFAULTS,
  type BackoffOptions,
  type JobHandler,
  type WarrenOptions,
} from '../../../src';
import type { ConfirmPublisher, OutgoingMessage } from '../../../src/connection';
import { decodeJob, HEADERS } from '../../../src/message';
import { JobPublisher, PUBLISHER_DEFAULTS } from '../../../src/publisher';
import { queueConcurrency, resolveJobSettings, resolveWarrenConfig } from '../../../src/warren';
import { checkDelivery, isRefusal } from '../../../src/worker/delivery-checks';

/**
 * STYLE.md's precedence, level by level: per-call options > job definition (`@Job`) > warren options >
 * library defaults. No broker: the configuration step, the publisher with a confirm channel that only
 * records, and the worker's delivery checks.
 */
const topology = defineTopology({ queues: { work: { maxPriority: 9 } } });
const NOWHERE = 'amqp://127.0.0.1:1';
const classBackoff: BackoffOptions = { type: 'fixed', delayMs: 7 };
const warrenBackoff: BackoffOptions = { type: 'fixed', delayMs: 70 };

@Job('work.own', {
  queue: 'work',
  attempts: 5,
  backoff: classBackoff,
  timeoutMs: 500,
  concurrency: 2,
  priority: 3,
})
class OwnSettings implements JobHandler<object> {
  handle(): void {}
}

@Job('work.plain', { queue: 'work' })
class NoSettings implements JobHandler<object> {
  handle(): void {}
}

function config(options: Partial<WarrenOptions> = {}) {
  return resolveWarrenConfig({
    url: NOWHERE,
    topology,
    handlers: [new OwnSettings(), new NoSettings()],
    ...options,
  });
}

const warrenDefaults = { attempts: 9, backoff: warrenBackoff, timeoutMs: 9000, concurrency: 4 };

describe('precedence: job definition > warren options > library defaults', () => {
  it('takes the library defaults when neither the job nor the warren sets a value', () => {
    const plain = config().jobs.get('work.plain')!;
    assert.equal(plain.attempts, JOB_DEFAULTS.attempts);
    assert.deepEqual(plain.backoff, JOB_DEFAULTS.backoff);
    assert.equal(plain.timeoutMs, JOB_DEFAULTS.timeoutMs);
  });

  it("takes the warren's jobDefaults over the library defaults", () => {
    const plain = config({ jobDefaults: warrenDefaults }).jobs.get('work.plain')!;
    assert.equal(plain.attempts, 9);
    assert.deepEqual(plain.backoff, warrenBackoff);
    assert.equal(plain.timeoutMs, 9000);
  });

  it("takes the job's own settings over the warren's jobDefaults", () => {
    const own = config({ jobDefaults: warrenDefaults }).jobs.get('work.own')!;
    assert.equal(own.attempts, 5);
    assert.deepEqual(own.backoff, classBackoff);
    assert.equal(own.timeoutMs, 500);
  });

  it('merges level by level in one pure function', () => {
    const defaults = config({ jobDefaults: warrenDefaults }).jobDefaults;
    assert.deepEqual(resolveJobSettings({ name: 'a.b', attempts: 2 }, defaults), {
      attempts: 2,
      backoff: warrenBackoff,
      timeoutMs: 9000,
      concurrency: 4,
    });
  });

  it("sizes a queue's prefetch by the largest concurrency of its jobs, each merged the same way", () => {
    const withWarren = config({ jobDefaults: warrenDefaults });
    const queueName = withWarren.plan.jobs.get('work.plain')!.queueName;
    // work.own says 2, work.plain falls back to the warren's 4.
    assert.equal(queueConcurrency(withWarren.jobs.values(), queueName, withWarren.jobDefaults), 4);
    const alone = config({ handlers: [new OwnSettings()] });
    assert.equal(queueConcurrency(alone.jobs.values(), queueName, alone.jobDefaults), 2);
    const library = config({ handlers: [new NoSettings()] });
    assert.equal(
      queueConcurrency(library.jobs.values(), queueName, library.jobDefaults),
      JOB_DEFAULTS.concurrency,
    );
  });
});

/** A publisher over a confirm channel that records what it would send and confirms at once. */
function recordingPublisher(options: Partial<WarrenOptions> = {}) {
  const resolved = config(options);
  const sent: OutgoingMessage[] = [];
  const confirms = {
    send: async (message: OutgoingMessage) => {
      sent.push(message);
    },
  } as unknown as ConfirmPublisher;
  return { sent, publisher: new JobPublisher(resolved.plan, confirms, resolved.publisher), resolved };
}

describe('precedence: per-call publish options > job definition > warren options > defaults', () => {
  it("takes a publish's priority over the job's", async () => {
    const { sent, publisher } = recordingPublisher();
    await publisher.publish('work.own', {});
    await publisher.publish('work.own', {}, { priority: 8 });
    assert.equal(sent[0]!.properties.priority, 3);
    assert.equal(sent[1]!.properties.priority, 8);
  });

  it("takes a publish's timeoutMs over the warren's publisher.timeoutMs over the default", async () => {
    const before = Date.now();
    const byDefault = recordingPublisher();
    await byDefault.publisher.publish('work.plain', {});
    const fromWarren = recordingPublisher({ publisher: { timeoutMs: 1234 } });
    await fromWarren.publisher.publish('work.plain', {});
    await fromWarren.publisher.publish('work.plain', {}, { timeoutMs: 60 });
    const after = Date.now();
    const within = (deadline: number, timeoutMs: number) =>
      deadline >= before + timeoutMs && deadline <= after + timeoutMs;
    assert.ok(within(byDefault.sent[0]!.deadline, PUBLISHER_DEFAULTS.timeoutMs));
    assert.ok(within(fromWarren.sent[0]!.deadline, 1234));
    assert.ok(within(fromWarren.sent[1]!.deadline, 60));
  });

  it("runs a publish's attempts below the job's, but never above them", async () => {
    const { sent, publisher, resolved } = recordingPublisher();
    await publisher.publish('work.own', {}, { attempts: 2 });
    await publisher.publish('work.own', {}, { attempts: 50 });
    await publisher.publish('work.own', {});
    assert.equal(sent[0]!.properties.headers![HEADERS.maxAttempts], 2);
    const own = resolved.jobs.get('work.own')!;
    const maxAttempts = sent.map((message) => {
      const checked = checkDelivery(
        decodeJob(message as unknown as Parameters<typeof decodeJob>[0], Date.now()),
        own,
        { name: own.planned.queueName, key: 'work' },
        Date.now(),
      );
      assert.ok(!isRefusal(checked));
      return checked.maxAttempts;
    });
    assert.deepEqual(maxAttempts, [2, 5, 5]);
  });
});
