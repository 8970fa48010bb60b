import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  defineTopology,
  Job,
  JOB_DEFAULTS,
  WORKER_DEFAULTS,
  type JobHandler,
} from '../../../src';
import type { Instrumentation } from '../../../src/observability';
import { PUBLISHER_DEFAULTS } from '../../../src/publisher';
import { isStream } from '../../../src/topology';
import { resolveWarrenConfig } from '../../../src/warren';

const topology = defineTopology({ queues: { email: {}, reports: { maxPriority: 5 } } });

@Job('email.welcome', { queue: 'email' })
class WelcomeEmail implements JobHandler<object> {
  handle(): void {}
}

@Job('report.build', { queue: 'reports' })
class BuildReport implements JobHandler<object> {
  handle(): void {}
}

@Job('email.digest', { queue: 'email', attempts: 0 })
class BadAttempts implements JobHandler<object> {
  handle(): void {}
}

/** No broker listens here: resolving must not try to connect. */
const NOWHERE = 'amqp://127.0.0.1:1';

describe('resolveWarrenConfig', () => {
  it('resolves every option to its default, plans the topology and connects nothing', () => {
    const config = resolveWarrenConfig({ url: NOWHERE, namespace: 'app', topology });
    assert.deepEqual(config.connection.urls, [NOWHERE]);
    assert.equal(config.publisher.timeoutMs, PUBLISHER_DEFAULTS.timeoutMs);
    assert.equal(config.worker.shutdownGraceMs, WORKER_DEFAULTS.shutdownGraceMs);
    assert.deepEqual(config.jobDefaults, JOB_DEFAULTS);
    assert.equal(config.instrumentation, undefined);
    assert.ok(config.plan.queues.some((q) => q.name === 'app.email' && q.role === 'job'));
    assert.equal(config.jobs.size, 0);
  });

  it('plans the job-control and schedule streams (each with its checkpoints) always, the dead-letter log and history when given, retention from the options', () => {
    const streams = (options: object) =>
      resolveWarrenConfig({ url: NOWHERE, namespace: 'app', topology, ...options })
        .plan.queues.filter(isStream)
        .map((q) => `${q.name} ${String(q.assertion.arguments['x-max-age'] ?? 'kept')}`);
    const always = [
      'app.warren.job-control 31708800s',
      'app.warren.job-control.checkpoints 2592000s',
      'app.warren.schedules kept',
      'app.warren.schedules.checkpoints 2592000s',
    ];
    assert.deepEqual(streams({}), always);
    assert.deepEqual(streams({ deadLetterLog: {} }).at(-1), 'app.warren.dead-log 1209600s');
    assert.deepEqual(
      streams({ history: { maxAgeMs: 7_200_000 }, deadLetterLog: { maxAgeMs: 86_400_000, collect: false } }),
      [...always, 'app.warren.dead-log 86400s', 'app.warren.history 7200s'],
    );
    assert.throws(
      () => resolveWarrenConfig({ url: NOWHERE, topology, history: { maxAgeMs: 10 } }),
      /history\.maxAgeMs/,
    );
  });

  it('registers the handlers this process runs and plans the classes it only publishes', () => {
    const config = resolveWarrenConfig({
      url: NOWHERE,
      topology,
      handlers: [new WelcomeEmail()],
      jobs: [BuildReport],
    });
    assert.deepEqual([...config.jobs.keys()], ['email.welcome']);
    assert.ok(config.plan.jobs.has('report.build'));
    const welcome = config.jobs.get('email.welcome')!;
    assert.equal(welcome.planned, config.plan.jobs.get('email.welcome'));
    assert.deepEqual(welcome.breakers, []);
  });

  it('adds a slip companion job for every activity, registered where this process has its handler', () => {
    const config = resolveWarrenConfig({
      url: NOWHERE,
      topology,
      handlers: [new WelcomeEmail()],
      jobs: [BuildReport],
      activities: [WelcomeEmail, BuildReport],
    });
    assert.deepEqual([...config.slipActivities].sort(), ['email.welcome', 'report.build']);
    assert.ok(config.plan.jobs.has('email.welcome.slip'));
    assert.ok(config.plan.jobs.has('report.build.slip'));
    assert.deepEqual([...config.jobs.keys()], ['email.welcome', 'email.welcome.slip']);
  });

  it('refuses a handler class where an instance belongs, and two handlers of one job', () => {
    assert.throws(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [WelcomeEmail] }),
      (error: unknown) =>
        error instanceof ConfigurationError && /new WelcomeEmail\(\.\.\.\)/.test(error.message),
    );
    assert.throws(
      () =>
        resolveWarrenConfig({ url: NOWHERE, topology, handlers: [new WelcomeEmail(), new WelcomeEmail()] }),
      /two handlers for job 'email.welcome'/,
    );
  });

  it("refuses a logger without pino's methods with a ConfigurationError naming them", () => {
    for (const logger of [false, 'pino', { info() {}, warn() {}, error() {}, debug() {} }])
      assert.throws(
        () => resolveWarrenConfig({ logger: logger as never }),
        (error: unknown) =>
          error instanceof ConfigurationError && /^logger must be a pino logger .*child/.test(error.message),
        String(logger),
      );
  });

  it("names the job's path when its own setting is invalid", () => {
    assert.throws(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [new BadAttempts()] }),
      (error: unknown) =>
        error instanceof ConfigurationError && error.message.startsWith("@Job('email.digest').attempts"),
    );
  });

  it('combines a list of instrumentations into one and keeps a single one as it is', () => {
    const one: Instrumentation = { publish: () => undefined };
    const two: Instrumentation = { publish: () => undefined };
    assert.equal(resolveWarrenConfig({ url: NOWHERE, instrumentation: one }).instrumentation, one);
    const both = resolveWarrenConfig({ url: NOWHERE, instrumentation: [one, two] }).instrumentation;
    assert.ok(both !== undefined && both !== one && both !== two);
  });

  it('refuses a job with more attempts than the delivery limit of a queue that retries in place', () => {
    @Job('billing.charge', { queue: 'billing', attempts: 8 })
    class Charge implements JobHandler<object> {
      handle(): void {}
    }
    const inPlace = defineTopology({ queues: { billing: { inPlaceRetryMs: 1000, deliveryLimit: 5 } } });
    assert.throws(
      () => resolveWarrenConfig({ url: NOWHERE, topology: inPlace, handlers: [new Charge()] }),
      (e: unknown) =>
        e instanceof ConfigurationError &&
        /attempts \(8\) is over the delivery limit \(5\).*deliveryLimit to at least 8/.test(e.message),
    );
    const raised = defineTopology({ queues: { billing: { inPlaceRetryMs: 1000, deliveryLimit: 8 } } });
    assert.ok(
      resolveWarrenConfig({ url: NOWHERE, topology: raised, handlers: [new Charge()] }).jobs.has(
        'billing.charge',
      ),
    );
  });
});
