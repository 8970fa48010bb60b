import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { ConfigurationError, defineJob, defineTopology, type JobOptions } from '../../../src';
import { resolveWarrenConfig } from '../../../src/warren';

/** The isolate options of a job, resolved and checked by createWarren's pure step (issue 34). */
const topology = defineTopology({ queues: { pdf: {} } });
const processor = __filename;

function settingsOf(options: Partial<JobOptions>, jobDefaults = {}) {
  const job = defineJob('pdf.render', { queue: 'pdf', ...options }, () => 'ok');
  return resolveWarrenConfig({ topology, handlers: [job], jobDefaults }).jobs.get('pdf.render')!;
}

function refusal(options: Partial<JobOptions>): string {
  try {
    settingsOf(options);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, `a ConfigurationError, got ${String(error)}`);
    return error.message;
  }
  return assert.fail('should have thrown');
}

describe('isolate settings', () => {
  it('runs a job inline without isolate, and refuses an isolate option given without it', () => {
    assert.equal(settingsOf({}).isolate, undefined);
    assert.match(refusal({ hardTimeoutMs: 100 }), /hardTimeoutMs needs @Job\('pdf.render'\)\.isolate/);
    assert.match(refusal({ pool: { size: 2 } }), /pool needs/);
  });

  it('defaults the hard timeout to the timeout, the pool to the concurrency at most the cores, one warm', () => {
    const job = settingsOf({ isolate: 'thread', processor, timeoutMs: 5000, concurrency: 1 });
    assert.equal(job.isolate?.kind, 'thread');
    assert.equal(job.isolate?.processor, pathToFileURL(processor).href);
    assert.equal(job.isolate?.hardTimeoutMs, 5000);
    assert.equal(job.isolate?.timeoutMs, 5000);
    assert.equal(job.isolate?.size, 1);
    assert.equal(job.isolate?.warm, 1);
    const wide = settingsOf({ isolate: 'process', processor, concurrency: 500 });
    assert.ok(wide.isolate!.size >= 1 && wide.isolate!.size < 500, 'at most the cores');
  });

  it('lets a hard timeout below the default timeout be the timeout, and refuses one below a timeout set', () => {
    const job = settingsOf({ isolate: 'thread', processor, hardTimeoutMs: 100 });
    assert.equal(job.isolate?.hardTimeoutMs, 100);
    assert.equal(job.timeoutMs, 100, 'the kill is the timeout');
    assert.match(
      refusal({ isolate: 'thread', processor, timeoutMs: 500, hardTimeoutMs: 100 }),
      /hardTimeoutMs must be >= its timeoutMs \(500 ms\).*\(got 100\)/,
    );
  });

  it("refuses a hard timeout at or past the broker's consumer timeout", () => {
    assert.match(
      refusal({ isolate: 'process', processor, timeoutMs: 60_000, hardTimeoutMs: 30 * 60_000 }),
      /below the broker's consumer_timeout/,
    );
  });

  it('refuses a missing or relative processor, an unknown kind, and a warm minimum over the size', () => {
    assert.match(refusal({ isolate: 'thread' }), /processor must name the module/);
    assert.match(refusal({ isolate: 'thread', processor: './render.js' }), /absolute path/);
    assert.match(refusal({ isolate: 'fiber' as 'thread', processor }), /isolate/);
    assert.match(
      refusal({ isolate: 'thread', processor, pool: { size: 1, warm: 2 } }),
      /pool.warm must be <=/,
    );
    assert.match(
      refusal({ isolate: 'thread', processor, recycleAfter: { job: 5 } as never }),
      /recycleAfter/,
    );
  });

  it('keeps a timeout set below the hard timeout: ctx.signal aborts before the kill', () => {
    const job = settingsOf({ isolate: 'thread', processor, timeoutMs: 1000, hardTimeoutMs: 4000 });
    assert.equal(job.timeoutMs, 1000, 'ctx.signal aborts first');
    assert.equal(job.isolate?.hardTimeoutMs, 4000);
  });
});
