import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  CircuitOpenError,
  Job,
  JobTimeoutError,
  PayloadValidationError,
  RetryLaterError,
  UnrecoverableError,
  type JobContext,
  type JobHandler,
} from '../../../src';
import { runJob } from '../../../src/testing';

type Welcome = { userId: string };

class FakeMailer {
  readonly sent: string[] = [];
  async send(userId: string): Promise<string> {
    this.sent.push(userId);
    return `message-for-${userId}`;
  }
}

@Job('email.welcome', { queue: 'email', attempts: 4, schema: z.object({ userId: z.string().min(1) }) })
class WelcomeEmail implements JobHandler<Welcome> {
  constructor(private readonly mailer: FakeMailer) {}
  async handle(data: Welcome, ctx: JobContext) {
    const messageId = await ctx.breaker('mailer').fire(() => this.mailer.send(data.userId));
    ctx.log.info({ messageId }, 'welcome email sent');
    await ctx.publish(
      'audit.record',
      { event: 'welcome-sent', userId: data.userId },
      { jobId: `audit-${ctx.jobId}` },
    );
    return { messageId };
  }
}

@Job('email.flaky', { queue: 'email', attempts: 3 })
class Flaky implements JobHandler<{ fail: 'plain' | 'unrecoverable' | 'later' }> {
  async handle(data: { fail: 'plain' | 'unrecoverable' | 'later' }) {
    if (data.fail === 'unrecoverable') throw new UnrecoverableError('address does not exist');
    if (data.fail === 'later') throw new RetryLaterError(30_000, 'rate limited');
    throw new Error('SMTP said no');
  }
}

@Job('email.slow', { queue: 'email', timeoutMs: 50 })
class Slow implements JobHandler<object> {
  async handle(_data: object, ctx: JobContext) {
    if (!ctx.signal.aborted)
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
    return ctx.signal.reason;
  }
}

describe('runJob', () => {
  it('runs the handler with its injected fake and returns what it returned, published and logged', async () => {
    const mailer = new FakeMailer();
    const run = await runJob(new WelcomeEmail(mailer), { userId: 'u1' }, { jobId: 'welcome-u1' });
    assert.equal(run.status, 'completed');
    assert.deepEqual(run.result, { messageId: 'message-for-u1' });
    assert.equal(run.error, undefined);
    assert.deepEqual(run.outcome, { action: 'complete' });
    assert.deepEqual(mailer.sent, ['u1']);
    assert.deepEqual(run.published, [
      {
        name: 'audit.record',
        data: { event: 'welcome-sent', userId: 'u1' },
        options: { jobId: 'audit-welcome-u1' },
      },
    ]);
    assert.deepEqual(run.breakersFired, ['mailer']);
    const line = run.logs.find((entry) => entry.msg === 'welcome email sent');
    assert.ok(line, 'the log line is recorded');
    assert.equal(line.level, 'info');
    assert.equal(line.messageId, 'message-for-u1');
    assert.equal(line.jobId, 'welcome-u1');
    assert.equal(line.job, 'email.welcome');
  });

  it('gives the handler a context like the worker does: name, queue, attempt, maxAttempts from the @Job', async () => {
    const run = await runJob(
      new WelcomeEmail(new FakeMailer()),
      { userId: 'u1' },
      { attempt: 2, headers: { tenant: 'acme' }, redelivered: true },
    );
    const ctx = run.context;
    assert.equal(ctx.name, 'email.welcome');
    assert.equal(ctx.queue, 'email');
    assert.equal(ctx.attempt, 2);
    assert.equal(ctx.maxAttempts, 4);
    assert.equal(ctx.redelivered, true);
    assert.deepEqual(ctx.headers, { tenant: 'acme' });
    assert.match(ctx.jobId, /^[0-9a-f-]{36}$/);
    assert.equal(run.signal.aborted, false);
  });

  it('reports a failure and the retry that would follow, without throwing', async () => {
    const run = await runJob(new Flaky(), { fail: 'plain' }, { attempt: 1 });
    assert.equal(run.status, 'failed');
    assert.match(String((run.error as Error).message), /SMTP said no/);
    assert.deepEqual(run.outcome, { action: 'retry', nextAttempt: 2 });
  });

  it('says the job would be dead-lettered on its last attempt', async () => {
    const run = await runJob(new Flaky(), { fail: 'plain' }, { attempt: 3 });
    assert.deepEqual(run.outcome, { action: 'dead-letter', reason: 'attempts-exhausted' });
  });

  it('follows the handler signals: UnrecoverableError dead-letters at once, RetryLaterError picks the delay', async () => {
    const unrecoverable = await runJob(new Flaky(), { fail: 'unrecoverable' });
    assert.ok(unrecoverable.error instanceof UnrecoverableError);
    assert.deepEqual(unrecoverable.outcome, { action: 'dead-letter', reason: 'unrecoverable' });
    const later = await runJob(new Flaky(), { fail: 'later' });
    assert.deepEqual(later.outcome, { action: 'retry', nextAttempt: 2, delayMs: 30_000 });
  });

  it('checks the payload against the @Job schema first and does not run the handler when it fails', async () => {
    const mailer = new FakeMailer();
    const run = await runJob(new WelcomeEmail(mailer), { userId: '' });
    assert.equal(run.status, 'failed');
    assert.ok(run.error instanceof PayloadValidationError);
    assert.equal(run.error.issues[0]?.path, 'userId');
    assert.deepEqual(run.outcome, { action: 'dead-letter', reason: 'invalid-payload' });
    assert.deepEqual(mailer.sent, []);
  });

  it('enforces the job timeout: the attempt fails with JobTimeoutError and ctx.signal aborts', async () => {
    const run = await runJob(new Slow(), {});
    assert.equal(run.status, 'failed');
    assert.ok(run.error instanceof JobTimeoutError);
    assert.equal(run.error.code, 'JOB_TIMEOUT');
    assert.equal(run.signal.aborted, true);
  });

  it('aborts ctx.signal when the caller aborts, as a worker shutting down would', async () => {
    const controller = new AbortController();
    const running = runJob(new Slow(), {}, { signal: controller.signal, timeoutMs: 10_000 });
    controller.abort(new Error('shutting down'));
    const run = await running;
    assert.equal(run.status, 'completed');
    assert.equal((run.result as Error).message, 'shutting down');
    assert.equal(run.signal.aborted, true);
  });

  it('fails calls through an open circuit breaker with CircuitOpenError, which postpones the job', async () => {
    const mailer = new FakeMailer();
    const run = await runJob(new WelcomeEmail(mailer), { userId: 'u1' }, { breakers: { mailer: 'open' } });
    assert.ok(run.error instanceof CircuitOpenError);
    assert.deepEqual(run.outcome, { action: 'postpone', breaker: 'mailer' });
    assert.deepEqual(mailer.sent, []);
  });

  it('lets the test answer ctx.publish, to see how the handler copes with a failed publish', async () => {
    const run = await runJob(
      new WelcomeEmail(new FakeMailer()),
      { userId: 'u1' },
      { publish: async () => Promise.reject(new Error('broker unreachable')) },
    );
    assert.equal(run.status, 'failed');
    assert.match((run.error as Error).message, /broker unreachable/);
    assert.equal(run.published.length, 1, 'the attempt is still recorded');
  });

  it('refuses a class that is not a @Job handler', async () => {
    await assert.rejects(runJob({ handle: async () => undefined }, undefined), /not a job handler/);
  });
});
