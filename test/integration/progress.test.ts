import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineTopology, Job, type JobContext, type JobHandler } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import {
  cleanup,
  closeConnectionsNamed,
  testNamespace,
  testProfile,
  testWarren,
} from '../support/test-broker';
import { nextEvent, passTime, waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { imports: {} } });
const held: (() => void)[] = [];

@Job('import.rows', { queue: 'imports', attempts: 1 })
class ImportRows implements JobHandler<{ rows: number; hold?: boolean }> {
  async handle(data: { rows: number; hold?: boolean }, ctx: JobContext) {
    for (let i = 1; i <= data.rows; i++) {
      ctx.progress({ done: i, of: data.rows });
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
      // Simulated work: the run spans several 100 ms coalescing windows.
      if (i % 500 === 0) await passTime(30);
    }
    if (data.hold) await new Promise<void>((resolve) => held.push(resolve));
    return data.rows;
  }
}

describe('progress', () => {
  const opened: WarrenOps[] = [];
  afterEach(async () => {
    for (const release of held.splice(0)) release();
    for (const ops of opened.splice(0)) await ops.close();
    // the history stream is in each warren's plan (history on): cleanup deletes it with the rest
    await cleanup();
  });

  it('coalesces reports to one event per 100 ms, the last value before completed', async () => {
    const warren = await testWarren({ topology, handlers: [new ImportRows()] });
    const seen: { kind: string; at: number; value?: unknown }[] = [];
    warren.on('progress', (e) => seen.push({ kind: 'progress', at: Date.now(), value: e.progress }));
    warren.on('completed', () => seen.push({ kind: 'completed', at: Date.now() }));
    await warren.start();
    const started = Date.now();
    const done = nextEvent(warren, 'completed');
    await warren.publish('import.rows', { rows: 5000 });
    await done;
    const elapsed = Date.now() - started;
    const progress = seen.filter((s) => s.kind === 'progress');
    assert.ok(progress.length >= 2, `some progress events (${progress.length})`);
    assert.ok(progress.length <= elapsed / 100 + 2, `${progress.length} events in ${elapsed} ms`);
    // The window spaces the events; the last one may come sooner: the job's end sends its unsent value
    // at once, before completed (a loaded machine stretches the run, so that flush lands anywhere in a window).
    for (let i = 1; i < progress.length - 1; i++)
      assert.ok(progress[i]!.at - progress[i - 1]!.at >= 95, 'events at least ~100 ms apart');
    assert.deepEqual(progress.at(-1)!.value, { done: 5000, of: 5000 });
    assert.equal(seen.at(-1)!.kind, 'completed');
  });

  it('records the last progress in the job history: ops.job(id) on another instance shows it', async () => {
    const namespace = testNamespace('prog');
    const worker = await testWarren({
      namespace,
      topology,
      handlers: [new ImportRows()],
      history: { flushMs: 20 },
    });
    await worker.start();
    const ops = createOps({ ...testProfile(namespace), topology, jobs: [ImportRows] });
    opened.push(ops);
    const job = await worker.publish('import.rows', { rows: 120, hold: true });
    const running = await waitFor(
      async () => {
        const status = await ops.job(job.jobId);
        const progress = status.progress as { done: number } | undefined;
        return status.state === 'running' && progress?.done === 120 ? status : undefined;
      },
      { what: 'the last progress in the history', intervalMs: 100 },
    );
    assert.deepEqual(running.progress, { done: 120, of: 120 });
    assert.ok(running.events.some((e) => e.kind === 'progress'));
    for (const release of held.splice(0)) release();
    const completed = await waitFor(
      async () => {
        const status = await ops.job(job.jobId);
        return status.state === 'completed' ? status : undefined;
      },
      { what: 'completed', intervalMs: 100 },
    );
    assert.deepEqual(completed.progress, { done: 120, of: 120 });
  });

  it('keeps recording progress after the worker reconnects: the redelivered run reports and completes', async () => {
    const namespace = testNamespace('prog');
    const worker = await testWarren({
      namespace,
      topology,
      handlers: [new ImportRows()],
      history: { flushMs: 20 },
      connection: { connectionName: `${namespace} worker` },
    });
    await worker.start();
    const ops = createOps({ ...testProfile(namespace), topology, jobs: [ImportRows] });
    opened.push(ops);
    const job = await worker.publish('import.rows', { rows: 120, hold: true });
    await waitFor(() => held.length === 1, { what: 'the first run to hold' });
    const reconnected = nextEvent(worker, 'connected');
    assert.ok((await closeConnectionsNamed(`${namespace} worker`)) >= 1);
    await reconnected;
    const reconnectedAt = Date.now();
    // the broker took the unacked delivery back with the connection: it runs again and reports again
    await waitFor(() => held.length === 2, { what: 'the redelivered run to hold' });
    for (const release of held.splice(0)) release();
    const completed = await waitFor(
      async () => {
        const status = await ops.job(job.jobId);
        return status.state === 'completed' ? status : undefined;
      },
      { what: 'completed in the history after the reconnect', intervalMs: 100 },
    );
    assert.deepEqual(completed.progress, { done: 120, of: 120 });
    assert.ok(
      completed.events.some((e) => e.kind === 'progress' && e.at.getTime() >= reconnectedAt - 5),
      'progress recorded by the run after the reconnect',
    );
  });
});
