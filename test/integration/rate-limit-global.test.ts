import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChildWorkers } from '../fixtures/child-workers';
import {
  ApiCall,
  LIMIT,
  rateLimitTopology,
  type RateLimitWorkerMessage,
} from '../fixtures/rate-limit-worker';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';

const WINDOWS = 10;

describe('a rate limit across three processes', () => {
  const workers = new ChildWorkers<RateLimitWorkerMessage>('../fixtures/rate-limit-worker');
  after(async () => {
    await workers.killAll();
    await cleanup();
  });

  it(`holds ${LIMIT.max} per second over ${WINDOWS} seconds however many processes run the job`, async () => {
    const namespace = testNamespace('limit3');
    const publisher = await testWarren({ namespace, topology: rateLimitTopology, jobs: [ApiCall] });
    // Declares the permit and refill queues as well (it runs the limited job), so that cleanup() deletes
    // them; never started.
    await testWarren({ namespace, topology: rateLimitTopology, handlers: [new ApiCall()] });
    const backlog = LIMIT.max * (WINDOWS + 4);
    await Promise.all(Array.from({ length: backlog }, (_, n) => publisher.publish(ApiCall, { n })));

    const children = [0, 1, 2].map(() => workers.fork([namespace]));
    await waitFor(() => children.every((c) => c.messages.some((m) => m.kind === 'ready')), {
      timeoutMs: 20_000,
      what: 'three workers to start',
    });
    const ran = () =>
      children.flatMap((c) =>
        c.messages.filter((m): m is Extract<RateLimitWorkerMessage, { kind: 'ran' }> => m.kind === 'ran'),
      );
    await waitFor(() => ran().length > 0, { what: 'the first run' });
    const start = Math.min(...ran().map((r) => r.at));
    // The measurement: the runs during WINDOWS refill windows (and a margin) are what the test counts.
    await passTime(start + WINDOWS * LIMIT.durationMs + 200 - Date.now());
    await workers.killAll();

    const inWindow = ran().filter((r) => r.at < start + WINDOWS * LIMIT.durationMs);
    const perSecond = Array.from(
      { length: WINDOWS },
      (_, i) => inWindow.filter((r) => r.at >= start + i * 1000 && r.at < start + (i + 1) * 1000).length,
    );
    const perProcess = children.map((c) => inWindow.filter((r) => r.pid === c.pid).length);
    const aligned = new Map<number, number>();
    for (const r of inWindow)
      aligned.set(Math.floor(r.at / 1000), (aligned.get(Math.floor(r.at / 1000)) ?? 0) + 1);
    const postponed = children.flatMap((c) => c.messages.filter((m) => m.kind === 'rateLimited')).length;
    console.log(
      `# runs per wall-clock second (the refill windows): ${[...aligned.values()].join(' ')}; jobs re-delayed for want of a permit: ${postponed}`,
    );
    console.log(
      `# ${inWindow.length} runs in ${WINDOWS} s (limit ${LIMIT.max}/s, ideal ${LIMIT.max * WINDOWS}); per second ${perSecond.join(' ')}; per process ${perProcess.join(' ')}`,
    );
    assert.ok(
      inWindow.length <= LIMIT.max * (WINDOWS + 1),
      `${inWindow.length} runs: more than one window over the limit`,
    );
    assert.ok(
      inWindow.length >= LIMIT.max * WINDOWS * 0.9,
      `${inWindow.length} runs: less than 90 % of the limit`,
    );
    assert.ok(
      perProcess.every((n) => n > 0),
      'every process got permits',
    );
    assert.equal(new Set(inWindow.map((r) => r.jobId)).size, inWindow.length, 'no job ran twice');
    assert.ok(
      inWindow.every((r) => r.attempt === 1),
      'no attempt was spent waiting',
    );
  });
});
