import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTopology, Job, type JobHandler } from '../../src';
import { createOps, type JobState, type WarrenOps } from '../../src/ops';
import { runCli } from '../support/run-cli';
import { planOf } from '../../src/warren';
import {
  BROKER_URL,
  cleanup,
  rawConnection,
  testNamespace,
  testProfile,
  testWarren,
} from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const topology = defineTopology({ queues: { work: {} } });

interface Step {
  readonly mode: 'ok' | 'fail' | 'hold';
  readonly text?: string;
}

const held: (() => void)[] = [];

@Job('work.step', { queue: 'work', attempts: 2, backoff: { type: 'fixed', delayMs: 100 } })
class StepJob implements JobHandler<Step> {
  async handle(data: Step): Promise<{ echoed: string } | undefined> {
    if (data.mode === 'fail') throw new RangeError('step out of range');
    if (data.mode === 'hold') await new Promise<void>((resolve) => held.push(resolve));
    return data.text === undefined ? undefined : { echoed: data.text };
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

  it('keeps each outcome’s payload (the body’s bytes) and result, cut to their caps, signed, or neither when told not to', async () => {
    const namespace = testNamespace('histkeep');
    const signingKey = 'history-keeps-payloads-0123456789abcdef';
    const warren = await testWarren({
      ...options(namespace),
      handlers: [new StepJob()],
      signingKey,
      history: { flushMs: 20, maxPayloadBytes: 48, maxResultBytes: 40 },
    });
    const ops = createOps({ ...options(namespace), signingKey });
    opened.push(ops);
    await warren.start();

    const small = await warren.publish('work.step', { mode: 'ok', text: 'hi' });
    const done = await stateOf(ops, small.jobId, 'completed');
    // the body as warren's publisher wrote it: the payload's JSON, byte for byte
    assert.equal(done.last!.payload, JSON.stringify({ mode: 'ok', text: 'hi' }));
    assert.equal(done.last!.payloadBytes, undefined);
    assert.equal(done.last!.result, '{"echoed":"hi"}');
    assert.deepEqual(JSON.parse(done.last!.result!), { echoed: 'hi' });
    assert.equal(done.events.find((e) => e.kind === 'started')!.payload, undefined);

    // past the caps: the first bytes, cut between characters, and the full size
    const text = 'ü'.repeat(40);
    const big = await warren.publish('work.step', { mode: 'ok', text });
    const cut = (await stateOf(ops, big.jobId, 'completed')).last!;
    const body = JSON.stringify({ mode: 'ok', text });
    assert.equal(cut.payloadBytes, Buffer.byteLength(body));
    assert.ok(body.startsWith(cut.payload!) && Buffer.byteLength(cut.payload!) >= 47, cut.payload);
    assert.equal(cut.resultBytes, Buffer.byteLength(JSON.stringify({ echoed: text })));
    assert.ok(JSON.stringify({ echoed: text }).startsWith(cut.result!), cut.result);
    assert.ok(Buffer.byteLength(cut.result!) <= 40 && Buffer.byteLength(cut.result!) >= 39, cut.result);

    // failed attempts keep the payload too (no result)
    const fail = await warren.publish('work.step', { mode: 'fail', text: 'no' });
    const dead = await stateOf(ops, fail.jobId, 'dead');
    for (const e of dead.events.filter((x) => x.kind === 'retrying' || x.kind === 'dead'))
      assert.equal(e.payload, '{"mode":"fail","text":"no"}', e.kind);
    assert.equal(dead.last!.result, undefined);

    // the queue's recent lists carry them
    const recent = await ops.recentJobs('work');
    const listed = recent!.completed.find((j) => j.jobId === small.jobId)!;
    assert.deepEqual([listed.payload, listed.result], ['{"mode":"ok","text":"hi"}', '{"echoed":"hi"}']);
    assert.equal(recent!.failed.find((j) => j.jobId === fail.jobId)?.payload, '{"mode":"fail","text":"no"}');

    // a batch anyone may append to the stream, unsigned, with a payload of its own, is never shown
    const stream = planOf(warren).naming.jobHistory();
    const forged = {
      p: 'x',
      h: 'forger',
      pid: 1,
      e: [{ j: 'forged-1', n: 'work.step', q: 'work', k: 'completed', t: Date.now(), b: '{"forged":true}' }],
    };
    const connection = await rawConnection();
    try {
      const channel = await connection.createConfirmChannel();
      channel.sendToQueue(stream, Buffer.from(JSON.stringify(forged)), { persistent: true });
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    const fresh = createOps({ ...options(namespace), signingKey });
    opened.push(fresh);
    assert.equal((await fresh.job('forged-1')).state, 'unknown');
    const again = await fresh.recentJobs('work');
    assert.equal(
      again!.completed.some((j) => j.jobId === 'forged-1'),
      false,
    );
    assert.ok(
      (fresh.skippedRecords().byRole.history?.unsigned ?? 0) >= 1,
      JSON.stringify(fresh.skippedRecords()),
    );

    // warren job <id> prints them, escaped for the terminal, a cut one with its size
    const dir = mkdtempSync(join(tmpdir(), 'warren-job-'));
    writeFileSync(
      join(dir, 'warren.config.js'),
      `module.exports = ${JSON.stringify({ url: BROKER_URL, namespace, topology, signingKey })};\n`,
    );
    const shown = await runCli(['job', small.jobId], { cwd: dir });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /\npayload: \{"mode":"ok","text":"hi"\}\nresult: \{"echoed":"hi"\}\n/);
    const shownCut = await runCli(['job', big.jobId], { cwd: dir });
    assert.match(
      shownCut.stdout,
      new RegExp(`payload: .* … \\(its first \\d+ of ${Buffer.byteLength(body)} bytes\\)`),
    );

    // with payloads and results off, an outcome keeps neither
    const quiet = testNamespace('histquiet');
    const off = await testWarren({
      ...options(quiet),
      handlers: [new StepJob()],
      history: { flushMs: 20, payloads: false, results: false },
    });
    const offOps = createOps({ ...options(quiet) });
    opened.push(offOps);
    await off.start();
    const private_ = await off.publish('work.step', { mode: 'ok', text: 'secret' });
    const kept = (await stateOf(offOps, private_.jobId, 'completed')).last!;
    assert.deepEqual([kept.payload, kept.result], [undefined, undefined]);
  });
});
