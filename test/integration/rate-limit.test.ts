import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { cleanup, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { api: {} } });

const runs: { name: string; jobId: string; attempt: number; at: number }[] = [];
const record = (ctx: JobContext) =>
  runs.push({ name: ctx.name, jobId: ctx.jobId, attempt: ctx.attempt, at: Date.now() });

@Job('api.call', { queue: 'api', concurrency: 10, limiter: { max: 5, durationMs: 1000 } })
class ApiCall implements JobHandler<{ n: number }> {
  async handle(_data: { n: number }, ctx: JobContext) {
    record(ctx);
  }
}

@Job('api.scarce', { queue: 'api', concurrency: 2, limiter: { max: 1, durationMs: 60_000, waitMs: 200 } })
class ScarceCall implements JobHandler<{ n: number }> {
  async handle(_data: { n: number }, ctx: JobContext) {
    record(ctx);
  }
}

@Job('api.free', { queue: 'api', concurrency: 2 })
class FreeCall implements JobHandler<{ n: number }> {
  async handle(_data: { n: number }, ctx: JobContext) {
    record(ctx);
  }
}

/** The most runs that started within any `windowMs`. */
function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe('rate limits in one process', () => {
  afterEach(async () => {
    await cleanup();
    runs.length = 0;
  });
  after(cleanup);

  it('starts at most max jobs per window, and runs them all without spending attempts', async () => {
    const warren = await testWarren({ topology, handlers: [new ApiCall()] });
    await Promise.all(Array.from({ length: 20 }, (_, n) => warren.publish(ApiCall, { n })));
    const started = Date.now();
    await warren.start();
    await waitFor(() => runs.length === 20, { timeoutMs: 10_000, what: 'all 20 jobs' });
    const elapsed = Math.max(...runs.map((r) => r.at)) - started;
    // 5 at takeover, then 5 at each whole second: 20 need three refills after the first.
    assert.ok(elapsed >= 2_000, `20 jobs at 5 per second took only ${elapsed} ms`);
    assert.ok(
      busiestWindow(
        runs.map((r) => r.at),
        1000,
      ) <= 10,
      'never more than two windows worth in any second',
    );
    assert.equal(new Set(runs.map((r) => r.jobId)).size, 20);
    assert.ok(
      runs.every((r) => r.attempt === 1),
      'waiting for a permit spends no attempt',
    );
  });

  it('re-delays a job that waited too long for a permit without spending an attempt, while the queue keeps running other jobs', async () => {
    const warren = await testWarren({ topology, handlers: [new ScarceCall(), new FreeCall()] });
    await warren.start();
    const postponed = nextEvent<{ jobId: string; attempt: number; limiter: string; delayMs: number }>(
      warren,
      'rateLimited',
    );
    for (let n = 0; n < 3; n++) await warren.publish(ScarceCall, { n }, { jobId: `scarce-${n}` });
    for (let n = 0; n < 6; n++) await warren.publish(FreeCall, { n });
    const event = await postponed;
    assert.match(event.jobId, /^scarce-/);
    assert.equal(event.attempt, 1);
    assert.equal(event.limiter, 'api.scarce');
    assert.ok(
      event.delayMs >= 30_000 && event.delayMs <= 60_000,
      `re-delayed by ${event.delayMs} ms, about one window`,
    );
    await waitFor(() => runs.filter((r) => r.name === 'api.free').length === 6, {
      timeoutMs: 5_000,
      what: 'the unlimited jobs of the same queue',
    });
    await waitFor(() => runs.filter((r) => r.name === 'api.scarce').length === 1, {
      what: 'the one permit of the window to be used',
    });
  });

  it('refuses invalid limits at createWarren, naming the path and the value', async () => {
    @Job('bad.max', { queue: 'api', limiter: { max: 0, durationMs: 1000 } })
    class BadMax implements JobHandler {
      async handle() {}
    }
    @Job('bad.window', { queue: 'api', limiter: { max: 5, durationMs: 2.5 } })
    class BadWindow implements JobHandler {
      async handle() {}
    }
    @Job('shared.one', { queue: 'api', limiter: { key: 'vendor', max: 5, durationMs: 1000 } })
    class SharedOne implements JobHandler {
      async handle() {}
    }
    @Job('shared.two', { queue: 'api', limiter: { key: 'vendor', max: 9, durationMs: 1000 } })
    class SharedTwo implements JobHandler {
      async handle() {}
    }
    const rejects = (handlers: object[], message: string | RegExp) =>
      assert.rejects(
        testWarren({ topology, handlers }),
        (error: unknown) =>
          error instanceof ConfigurationError &&
          (typeof message === 'string' ? error.message === message : message.test(error.message)),
      );
    await rejects([new BadMax()], "@Job('bad.max').limiter.max must be an integer from 1 to 10000 (got 0)");
    await rejects(
      [new BadWindow()],
      "@Job('bad.window').limiter.durationMs must be an integer from 10 to 2147483647 (got 2.5)",
    );
    await rejects(
      [new SharedOne(), new SharedTwo()],
      /^@Job\('shared\.two'\)\.limiter shares rate-limit key 'vendor' with @Job\('shared\.one'\)\.limiter but sets max 9 per 1000 ms instead of 5 per 1000 ms$/,
    );
  });
});
