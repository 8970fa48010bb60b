import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  defineJob,
  defineTopology,
  Job,
  readJobDefinition,
  TopologyError,
  type DefinedJob,
  type JobContext,
  type JobData,
  type JobHandler,
  type Warren,
} from '../../../src';
import type { StandardSchemaV1 } from '../../../src/core';
import { resolveWarrenConfig } from '../../../src/warren';
import { runJob } from '../../../src/testing';
import { z } from 'zod';

const topology = defineTopology({ queues: { email: {}, reports: {} } });
const NOWHERE = 'amqp://127.0.0.1:1';

/** A Standard Schema by hand: no validation library in the unit tier. */
function schemaOf<T>(check: (value: unknown) => value is T): StandardSchemaV1<T> {
  return {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value) => (check(value) ? { value } : { issues: [{ message: 'invalid' }] }),
    },
  };
}
const userSchema = schemaOf(
  (v): v is { userId: string } => typeof (v as { userId?: unknown })?.userId === 'string',
);

@Job('email.welcome', { queue: 'email' })
class WelcomeEmail implements JobHandler<{ userId: string }> {
  handle(): void {}
}

/** Throws `type` with a message matching `message`. */
function throwsTyped(
  call: () => unknown,
  type: typeof ConfigurationError | typeof TopologyError,
  message: RegExp,
) {
  assert.throws(call, (error: unknown) => {
    assert.ok(error instanceof type, `a ${type.name}, got ${String(error)}`);
    assert.match((error as Error).message, message);
    return true;
  });
}

describe('defineJob', () => {
  it('returns a frozen job read by the same reader as a @Job class', () => {
    const job = defineJob('email.digest', { queue: 'email', attempts: 4, timeoutMs: 5000 }, () => 'sent');
    assert.ok(Object.isFrozen(job));
    assert.ok(Object.isFrozen(job.options));
    assert.equal(job.name, 'email.digest');
    const definition = readJobDefinition(job);
    assert.equal(definition.name, 'email.digest');
    assert.equal(definition.queue, 'email');
    assert.equal(definition.attempts, 4);
    assert.equal(definition.timeoutMs, 5000);
    assert.equal(readJobDefinition(job), definition, 'read once, like a class');
  });

  it('runs in runJob like a handler instance, with its schema and context', async () => {
    const job = defineJob('email.digest', { queue: 'email', schema: userSchema }, (data, ctx) => ({
      user: data.userId,
      attempt: ctx.attempt,
    }));
    const run = await runJob(job, { userId: 'u1' }, { attempt: 2 });
    assert.equal(run.status, 'completed');
    assert.deepEqual(run.result, { user: 'u1', attempt: 2 });
    const bad = await runJob(job, { userId: 7 } as never);
    assert.deepEqual(bad.outcome, { action: 'dead-letter', reason: 'invalid-payload' });
  });

  it('refuses a missing or non-function handler', () => {
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email' }, undefined as never),
      ConfigurationError,
      /defineJob\('email.digest'\) needs a handler function \(data, ctx\) => result .*got undefined/,
    );
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email' }, { handle() {} } as never),
      ConfigurationError,
      /needs a handler function .*got object/,
    );
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email' }, WelcomeEmail as never),
      ConfigurationError,
      /takes a handler function, not a class/,
    );
  });

  it('refuses a schema that is not a Standard Schema', () => {
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email', schema: { parse() {} } as never }, () => undefined),
      ConfigurationError,
      /defineJob\('email.digest'\) options.schema is not a Standard Schema/,
    );
  });

  it('refuses the same on a @Job class: one reader for both forms', () => {
    @Job('email.bad', { queue: 'email', schema: { version: 1 } as never })
    class BadSchema implements JobHandler {
      handle(): void {}
    }
    throwsTyped(
      () => readJobDefinition(BadSchema),
      ConfigurationError,
      /@Job\('email.bad'\) on BadSchema options.schema is not a Standard Schema/,
    );
    @Job('email.typo', { queue: 'email', retries: 3 } as never)
    class Typo implements JobHandler {
      handle(): void {}
    }
    throwsTyped(() => readJobDefinition(Typo), ConfigurationError, /options.retries is not an option/);
  });

  it('refuses an unknown option, a missing queue and a bad name, naming the job', () => {
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email', retries: 3 } as never, () => undefined),
      ConfigurationError,
      /defineJob\('email.digest'\) options.retries is not an option \(known: queue, attempts/,
    );
    throwsTyped(
      () => defineJob('email.digest', {} as never, () => undefined),
      ConfigurationError,
      /defineJob\('email.digest'\) must name its queue/,
    );
    throwsTyped(
      () => defineJob('email.digest', undefined as never, () => undefined),
      ConfigurationError,
      /needs options with its queue/,
    );
    throwsTyped(
      () => defineJob('Email Welcome', { queue: 'email' }, () => undefined),
      ConfigurationError,
      /must be dotted lowercase like 'email.welcome' \(got "Email Welcome"\)/,
    );
  });

  it('refuses a cron option or an activity option of the wrong shape', () => {
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email', cron: [{ tz: 'UTC' }] as never }, () => undefined),
      ConfigurationError,
      /options.cron\[0\] must be a cron pattern or \{ pattern/,
    );
    throwsTyped(
      () =>
        defineJob(
          'email.digest',
          { queue: 'email', cron: { pattern: '* * * * *', every: 1 } as never },
          () => 1,
        ),
      ConfigurationError,
      /options.cron.every is not an option/,
    );
    throwsTyped(
      () => defineJob('email.digest', { queue: 'email', activity: { compensate: 'undo' } as never }, () => 1),
      ConfigurationError,
      /options.activity.compensate must be a function/,
    );
  });

  it('refuses two handlers of one name: two defined jobs, or a defined job and a class', () => {
    const a = defineJob('email.welcome', { queue: 'email' }, () => undefined);
    const b = defineJob('email.welcome', { queue: 'email' }, () => undefined);
    throwsTyped(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [a, b] }),
      ConfigurationError,
      /two handlers for job 'email.welcome': defineJob\('email.welcome'\) and defineJob\('email.welcome'\)/,
    );
    throwsTyped(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [new WelcomeEmail(), a] }),
      ConfigurationError,
      /two handlers for job 'email.welcome': WelcomeEmail and defineJob\('email.welcome'\)/,
    );
  });

  it('refuses options that contradict the plan: an unknown queue, a second definition with other settings', () => {
    const lost = defineJob('email.lost', { queue: 'nowhere' }, () => undefined);
    throwsTyped(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [lost] }),
      TopologyError,
      /job 'email.lost' uses unknown queue 'nowhere' \(declared: email, reports\)/,
    );
    const here = defineJob('email.welcome', { queue: 'email' }, () => undefined);
    const there = defineJob('email.welcome', { queue: 'reports' }, () => undefined);
    throwsTyped(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [here], jobs: [there] }),
      TopologyError,
      /job 'email.welcome' is defined twice with different settings/,
    );
  });

  it('registers a handler, a publish-only job, a cron and an activity from the options', () => {
    const digest = defineJob(
      'email.digest',
      {
        queue: 'email',
        cron: ['0 9 * * *', { pattern: '0 18 * * *', id: 'evening', data: { userId: 'all' } }],
      },
      () => undefined,
    );
    const reserve = defineJob(
      'report.reserve',
      { queue: 'reports', activity: { compensate: () => undefined } },
      () => undefined,
    );
    const elsewhere = defineJob('report.elsewhere', { queue: 'reports', activity: true }, () => undefined);
    const config = resolveWarrenConfig({
      url: NOWHERE,
      topology,
      handlers: [digest, reserve],
      jobs: [elsewhere],
    });
    assert.deepEqual([...config.jobs.keys()].sort(), [
      'email.digest',
      'report.reserve',
      'report.reserve.slip',
    ]);
    assert.deepEqual([...config.slipActivities].sort(), ['report.elsewhere', 'report.reserve']);
    assert.ok(config.plan.jobs.has('report.elsewhere.slip'), 'a publish-only activity is planned too');
    assert.deepEqual(
      config.cron.crons.map((c) => [c.id, c.cron.pattern, c.job]),
      [
        ['email.digest', '0 9 * * *', 'email.digest'],
        ['evening', '0 18 * * *', 'email.digest'],
      ],
    );
    assert.ok(config.cron.scheduler.enabled, 'a cron option enables the scheduler like @Cron');
  });

  it('keeps the two-list form of activities working, and lets a job be in both', () => {
    const reserve = defineJob('report.reserve', { queue: 'reports', activity: true }, () => undefined);
    const config = resolveWarrenConfig({
      url: NOWHERE,
      topology,
      handlers: [reserve],
      activities: [reserve],
    });
    assert.deepEqual([...config.slipActivities], ['report.reserve']);
    assert.ok(config.jobs.has('report.reserve.slip'));
  });

  it('refuses two cron entries with one id, naming the defined job', () => {
    const twice = defineJob('email.digest', { queue: 'email', cron: ['0 9 * * *', '0 10 * * *'] }, () => 1);
    throwsTyped(
      () => resolveWarrenConfig({ url: NOWHERE, topology, handlers: [twice] }),
      ConfigurationError,
      /defineJob\('email.digest'\) cron\('0 10 \* \* \*'\) and defineJob\('email.digest'\) cron\('0 9 \* \* \*'\) share the schedule id/,
    );
  });

  it("types publish with a zod schema's input and the handler with its output", async () => {
    const Port = z.object({ port: z.string().transform(Number) });
    const listen = defineJob('net.listen', { queue: 'email', schema: Port }, (data) => {
      const port: number = data.port;
      return port + 1;
    });
    const input: JobData<typeof listen> = { port: '8080' };
    // @ts-expect-error publish takes the schema's input: a string
    const wrong: JobData<typeof listen> = { port: 8080 };
    assert.ok(wrong);
    const run = await runJob(listen, input);
    assert.equal(run.result, 8081);
  });

  it('types the data from the schema or the type argument, and publish with it', () => {
    const fromSchema = defineJob(
      'email.welcome',
      { queue: 'email', schema: userSchema },
      (data) => data.userId,
    );
    const fromGeneric = defineJob<{ count: number }>(
      'report.build',
      { queue: 'reports' },
      (data) => data.count,
    );
    const fromParameter = defineJob(
      'report.sum',
      { queue: 'reports' },
      (data: { a: number }, _ctx: JobContext) => data.a,
    );
    const checks: [JobData<typeof fromSchema>, JobData<typeof fromGeneric>, JobData<typeof fromParameter>] = [
      { userId: 'u1' },
      { count: 1 },
      { a: 1 },
    ];
    assert.equal(checks.length, 3);
    const typed: DefinedJob<{ userId: string }, string> = fromSchema;
    assert.equal(typed.name, 'email.welcome');
    // Compile-time only: publish takes the defined job's data type.
    const publishes = (warren: Warren) => [
      warren.publish(fromSchema, { userId: 'u1' }),
      // @ts-expect-error the schema's type: userId is a string
      warren.publish(fromSchema, { userId: 1 }),
      // @ts-expect-error the type argument: count is required
      warren.publish(fromGeneric, {}),
      warren.slip().step(fromGeneric, { count: 2 }),
      // @ts-expect-error publishWithResult checks the data too
      warren.publishWithResult(fromParameter, { a: 'one' }),
      warren
        .publishWithResult(fromParameter, { a: 1 })
        .then((handle) => handle.result({ timeoutMs: 1 }))
        .then((result) => {
          const sum: number = result; // the handler's return type
          // @ts-expect-error not a string
          const text: string = result;
          return [sum, text];
        }),
    ];
    assert.equal(typeof publishes, 'function');
    defineJob(
      'email.cron',
      // @ts-expect-error cron data is the job's data
      { queue: 'email', schema: userSchema, cron: { pattern: '* * * * *', data: { id: 1 } } },
      () => 1,
    );
  });
});
