/**
 * Issue 33, item 4: `warren job <id>` and `warren dead search` answer from a fresh OS process (the CLI)
 * over a history and a log of thousands of records, the answer read to the stream's end (the last chunk's
 * records included), and a forged record (unsigned while a key is set) never changes an answer. Timings
 * are the bench's (`npm run bench -- lookup`), not asserted here.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as amqp from 'amqplib';
import { defineTopology } from '../../src';
import { createSilentLogger } from '../../src/core';
import { RecordTrust, resolveRecordSigning } from '../../src/records';
import { createNaming, planStream } from '../../src/topology';
import { resolveDeadLetterLogOptions } from '../../src/dead-letter-log';
import { signedFields } from '../../src/dead-letter-log/log-record';
import { encodeBlock, keyHash } from '../../src/streams';
import { runCli } from '../support/run-cli';
import { BROKER_URL, rawConnection, testNamespace } from '../support/test-broker';

const KEY = 'bounded-lookup-signing-key-0123456789ab';
const topology = defineTopology({ queues: { work: {} } });
const BATCHES = 400;
const EVENTS_PER_BATCH = 50;
const LETTERS = 3000;

interface Event {
  readonly j: string;
  readonly k: string;
  readonly t: number;
  readonly a?: number;
  readonly r?: string;
}

function event(j: string, k: string, t: number, extra: Partial<Event> = {}) {
  return { j, n: 'work.step', q: 'work', k, t, ...extra };
}

async function append(
  connection: amqp.ChannelModel,
  stream: string,
  records: readonly { content: Buffer; properties: amqp.Options.Publish }[],
  assertion: amqp.Options.AssertQueue = { durable: true, arguments: { 'x-queue-type': 'stream' } },
): Promise<void> {
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue(stream, assertion);
  for (const r of records) channel.sendToQueue(stream, r.content, r.properties);
  await channel.waitForConfirms();
  await channel.close();
}

/**
 * Appends to an offset index an unsigned block claiming offsets 0..`to` hold no key (accepted, it would
 * hide every record) and a block signed by `prove` pointing `key` at offsets 0..19 (records without it).
 */
async function forgeIndex(
  connection: amqp.ChannelModel,
  indexStream: string,
  to: number,
  key: string,
  prove: (content: Buffer) => Record<string, string>,
): Promise<void> {
  const channel = await connection.createConfirmChannel();
  const hide = encodeBlock({ from: 0, to, entries: [], marks: [] });
  channel.sendToQueue(indexStream, hide, { persistent: true });
  const wrong = encodeBlock({
    from: 0,
    to: 20,
    entries: Array.from({ length: 20 }, (_, i) => [keyHash(key), i] as const),
    marks: [],
  });
  channel.sendToQueue(indexStream, wrong, { persistent: true, headers: prove(wrong) });
  await channel.waitForConfirms();
  await channel.close();
}

describe('lookup and search from a fresh process (issue 33)', () => {
  const namespace = testNamespace('look');
  const naming = createNaming(namespace);
  const trust = new RecordTrust(namespace, resolveRecordSigning(KEY), createSilentLogger());
  let connection: amqp.ChannelModel;
  let cwd: string;
  const at = Date.now() - 60_000;

  before(async () => {
    connection = await rawConnection();
    cwd = mkdtempSync(join(tmpdir(), 'warren-lookup-'));
    writeFileSync(
      join(cwd, 'warren.config.js'),
      `module.exports = ${JSON.stringify({ url: BROKER_URL, namespace, topology, signingKey: KEY })};\n`,
    );
  });

  after(async () => {
    const channel = await connection.createChannel();
    await channel.deleteQueue(naming.jobHistory()).catch(() => undefined);
    await channel.deleteQueue(naming.deadLetterLog()).catch(() => undefined);
    await channel.deleteQueue(naming.deadLetterLogIndex()).catch(() => undefined);
    await channel.deleteQueue(naming.jobHistoryIndex()).catch(() => undefined);
    await channel.deleteQueue(naming.jobHistoryCheckpoints()).catch(() => undefined);
    await connection.close();
  });

  it('warren job <id> finds a job anywhere in a history of 20,000 events, and no forged batch changes it', async () => {
    const history: { content: Buffer; properties: amqp.Options.Publish }[] = [];
    const batch = (events: readonly object[], signed = true) => {
      const content = Buffer.from(JSON.stringify({ p: 'proc-1', h: 'host', pid: 1, e: events }));
      return {
        content,
        properties: { persistent: true, headers: signed ? trust.proof('history', content) : {} },
      };
    };
    for (let b = 0; b < BATCHES; b += 1) {
      const events: object[] = [];
      for (let i = 0; i < EVENTS_PER_BATCH; i += 1) events.push(event(`filler-${b}-${i}`, 'started', at + b));
      if (b === 3) events.push(event('early', 'published', at + b), event('early', 'started', at + b));
      if (b === BATCHES / 2) events.push(event('early', 'completed', at + b));
      if (b === BATCHES - 1)
        events.push(event('last', 'published', at + b), event('last', 'started', at + b));
      history.push(batch(events));
    }
    // The very last record of the stream: the answer must read the last chunk to its end.
    history.push(batch([event('last', 'retrying', at + BATCHES, { a: 1 })]));
    // A forged batch (no proof while a key is set) claiming both jobs died.
    history.push(batch([event('early', 'dead', at + 10 * BATCHES, { r: 'forged' })], false));
    history.push(batch([event('last', 'dead', at + 10 * BATCHES, { r: 'forged' })], false));
    await append(connection, naming.jobHistory(), history);

    const job = async (id: string) => {
      const run = await runCli(['job', id, '--json'], { cwd });
      assert.equal(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as { state: string; events: { kind: string }[] };
    };
    const early = await job('early');
    assert.equal(early.state, 'completed');
    assert.deepEqual(
      early.events.map((e) => e.kind),
      ['published', 'started', 'completed'],
    );
    const last = await job('last');
    assert.equal(last.state, 'retrying');
    assert.deepEqual(
      last.events.map((e) => e.kind),
      ['published', 'started', 'retrying'],
    );
    assert.equal((await job('filler-7-7')).state, 'running');
    assert.equal((await job('never-published')).state, 'unknown');

    // The lookups indexed the history. Now: an unsigned block claiming the history holds no job (it would
    // hide every event), a signed block pointing 'early' at batches without it (a wrong index costs reads,
    // never events), and batches appended after the index (read by the next lookup, then indexed too).
    await forgeIndex(connection, naming.jobHistoryIndex(), BATCHES + 100, 'j:early', (wrong) =>
      trust.proof('history', wrong, 'index'),
    );
    await append(connection, naming.jobHistory(), [
      batch([event('late', 'published', at + 2 * BATCHES)]),
      batch([event('late', 'started', at + 2 * BATCHES + 1), event('last', 'started', at + 2 * BATCHES)]),
    ]);
    assert.deepEqual(
      (await job('early')).events.map((e) => e.kind),
      ['published', 'started', 'completed'],
    );
    assert.equal((await job('late')).state, 'running');
    assert.deepEqual(
      (await job('last')).events.map((e) => e.kind),
      ['published', 'started', 'retrying', 'started'],
    );
    assert.equal((await job('late')).events.length, 2);
  });

  it('warren dead search finds letters by job id, field and reason in a log of 3,000, with their state, and no forged letter or marker is in an answer', async () => {
    const log: { content: Buffer; properties: amqp.Options.Publish }[] = [];
    const letter = (i: number, signed = true, reason?: string) => {
      const content = Buffer.from(JSON.stringify({ order: i, customer: { id: `c${i % 100}` } }));
      const properties: amqp.Options.Publish = {
        messageId: `job-${i}`,
        type: 'work.step',
        contentType: 'application/json',
        persistent: true,
        headers: {
          'warren-log-kind': 'letter',
          'warren-queue': 'work',
          'warren-dead-reason': reason ?? (i % 500 === 0 ? 'unrecoverable' : 'attempts-exhausted'),
          'warren-last-error': 'TypeError: card declined',
          'warren-dead-at': at + i,
          'warren-attempt': 3,
        },
      };
      const proof = signed ? trust.proof('dead-letter-log', content, signedFields(properties)) : {};
      return { content, properties: { ...properties, headers: { ...properties.headers, ...proof } } };
    };
    const marker = (offsets: number[], signed = true) => {
      const content = Buffer.from(JSON.stringify({ action: 'replayed', offsets, at: Date.now() }));
      const properties = { persistent: true, headers: { 'warren-log-kind': 'marker' } };
      const proof = signed ? trust.proof('dead-letter-log', content, 'marker') : {};
      return { content, properties: { ...properties, headers: { ...properties.headers, ...proof } } };
    };
    for (let i = 0; i < LETTERS; i += 1) log.push(letter(i));
    log.push(marker([1000])); // job-1000 was replayed: a signed marker
    log.push(marker([1500], false)); // a forged marker: job-1500 stays dead
    log.push(letter(2000, false, 'forged')); // a forged second letter of job-2000
    log.push(letter(7, false)); // a forged copy of job-7
    // declared as ops declares it (its retention), as a worker with deadLetterLog on would have
    const planned = planStream('dead-letter-log', resolveDeadLetterLogOptions({}), naming);
    await append(connection, planned.name, log, planned.assertion);

    const search = async (...args: string[]) => {
      const run = await runCli(['dead', 'search', '--json', '--limit', '1000', ...args], { cwd });
      assert.equal(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as { offset: number; state: string; jobId: string; reason: string }[];
    };
    const byId = await search('--job-id', 'job-2999');
    assert.deepEqual(
      byId.map((l) => [l.jobId, l.state]),
      [['job-2999', 'dead']],
    );
    assert.deepEqual(
      (await search('--job-id', 'job-1000')).map((l) => l.state),
      ['replayed'],
    );
    assert.deepEqual(
      (await search('--job-id', 'job-1500')).map((l) => l.state),
      ['dead'],
    );
    assert.deepEqual(
      (await search('--job-id', 'job-2000')).map((l) => l.reason),
      ['unrecoverable'],
    );
    assert.equal((await search('--job-id', 'job-7')).length, 1);
    const byField = await search('--field', 'customer.id=c42');
    assert.deepEqual(
      byField.map((l) => l.jobId),
      Array.from({ length: LETTERS / 100 }, (_, k) => `job-${42 + 100 * k}`),
    );
    const byReason = await search('--reason', 'unrecoverable');
    assert.deepEqual(
      byReason.map((l) => l.jobId),
      ['job-0', 'job-500', 'job-1000', 'job-1500', 'job-2000', 'job-2500'],
    );
    assert.deepEqual(
      (await search('--reason', 'unrecoverable', '--state', 'dead')).map((l) => l.jobId),
      ['job-0', 'job-500', 'job-1500', 'job-2000', 'job-2500'],
    );
    // The first query indexed the log. Now: an unsigned block claiming the whole log holds nothing (it
    // would hide every letter), and a signed block whose entries point job-2999 at other letters (a wrong
    // index costs reads, never an answer), then the same questions again.
    await forgeIndex(connection, naming.deadLetterLogIndex(), LETTERS + 10, 'j:job-2999', (wrong) =>
      trust.proof('dead-letter-log', wrong, 'index'),
    );
    assert.deepEqual(
      (await search('--job-id', 'job-2999')).map((l) => [l.jobId, l.state]),
      [['job-2999', 'dead']],
    );
    assert.deepEqual(
      (await search('--job-id', 'job-1000')).map((l) => l.state),
      ['replayed'],
    );
    assert.equal((await search('--field', 'customer.id=c42')).length, LETTERS / 100);
    const stats = await runCli(['dead', 'stats', '--json'], { cwd });
    assert.equal(stats.code, 0, stats.stderr);
    const s = JSON.parse(stats.stdout) as { letters: number; byState: Record<string, number> };
    assert.equal(s.letters, LETTERS);
    assert.deepEqual(s.byState, { dead: LETTERS - 1, replayed: 1, purged: 0 });
  });
});
