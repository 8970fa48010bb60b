import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTopology, Job, type JobHandler } from '../../src';
import { createOps, type JobState, type WarrenOps } from '../../src/ops';
import { runCli } from '../support/run-cli';
import { BROKER_URL, cleanup, testNamespace, testProfile, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { work: {} } });

interface Step {
  readonly mode: 'ok' | 'fail' | 'hold';
}

const held: (() => void)[] = [];

@Job('work.step', { queue: 'work', attempts: 2, backoff: { type: 'fixed', delayMs: 100 } })
class StepJob implements JobHandler<Step> {
  async handle(data: Step): Promise<void> {
    if (data.mode === 'fail') throw new RangeError('step out of range');
    if (data.mode === 'hold') await new Promise<void>((resolve) => held.push(resolve));
  }
}

const opened: WarrenOps[] = [];

function options(namespace: string) {
  return { ...testProfile(namespace), topology, jobs: [StepJob] };
}

async function stateOf(ops: WarrenOps, jobId: string, state: JobState) {
  return waitFor(
    async () => {
      const status = await ops.job(jobId);
      return status.state === state ? status : undefined;
    },
    { what: `job ${jobId} ${state}`, intervalMs: 100 },
  );
}

describe('job history: where is job X?', () => {
  afterEach(async () => {
    for (const release of held.splice(0)) release();
    for (const ops of opened.splice(0)) await ops.close();
    // the history stream is in each warren's plan (history on): cleanup deletes it with the rest
    await cleanup();
  });

  it('follows a job through waiting, delayed, running, completed, retrying and dead', async () => {
    const namespace = testNamespace('hist');
    const warren = await testWarren({
      ...options(namespace),
      handlers: [new StepJob()],
      history: { flushMs: 20 },
    });
    const ops = createOps({ ...options(namespace) });
    opened.push(ops);
    assert.equal((await ops.job('nope')).state, 'unknown');

    const delayed = await warren.publish('work.step', { mode: 'ok' }, { delayMs: 60_000 });
    const status = await stateOf(ops, delayed.jobId, 'delayed');
    assert.ok(status.last!.runAt!.getTime() > Date.now() + 50_000);

    await warren.start();
    const ok = await warren.publish('work.step', { mode: 'ok' });
    const done = await stateOf(ops, ok.jobId, 'completed');
    assert.deepEqual(
      done.events.map((e) => e.kind),
      ['published', 'started', 'completed'],
    );
    assert.equal(typeof done.last!.durationMs, 'number');

    const hold = await warren.publish('work.step', { mode: 'hold' });
    const running = await stateOf(ops, hold.jobId, 'running');
    assert.equal(running.last!.process, `${hostname()}:${process.pid}`);
    assert.equal(running.last!.processId, warren.processId);
    for (const release of held.splice(0)) release();
    await stateOf(ops, hold.jobId, 'completed');

    const fail = await warren.publish('work.step', { mode: 'fail' });
    const dead = await stateOf(ops, fail.jobId, 'dead');
    assert.deepEqual(
      dead.events.map((e) => e.kind),
      ['published', 'started', 'retrying', 'started', 'dead'],
    );
    const retrying = dead.events[2]!;
    assert.equal(retrying.attempt, 1);
    assert.match(retrying.error ?? '', /RangeError: step out of range/);
    assert.ok(retrying.runAt!.getTime() >= retrying.at.getTime() + 100);
    assert.equal(dead.last!.reason, 'attempts-exhausted');
    // each failed attempt's run time, as a completed run has its own
    for (const failed of [retrying, dead.last!])
      assert.ok(failed.durationMs !== undefined && failed.durationMs >= 0, JSON.stringify(failed));

    const dir = mkdtempSync(join(tmpdir(), 'warren-job-'));
    writeFileSync(
      join(dir, 'warren.config.js'),
      `module.exports = ${JSON.stringify({ url: BROKER_URL, namespace, topology })};\n`,
    );
    const text = await runCli(['job', fail.jobId], { cwd: dir });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /: dead: attempts-exhausted \(RangeError: step out of range\)/);
    const json = JSON.parse((await runCli(['job', ok.jobId, '--json'], { cwd: dir })).stdout);
    assert.equal(json.state, 'completed');
    assert.match((await runCli(['job', 'nope'], { cwd: dir })).stdout, /no history of job nope/);
  });
});
