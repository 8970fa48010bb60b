import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOps, UnknownQueueError, type WarrenOps } from '../../src/ops';
import { ConfigurationError, WarrenError } from '../../src';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { cleanup, deletePlanEntities, testNamespace, testWarren } from '../support/test-broker';
import { ROOT, runCli } from '../support/run-cli';
import { waitFor } from '../support/wait-for';

const opened: WarrenOps[] = [];

function opsFor(namespace: string, extra: Parameters<typeof createOps>[0] = {}): WarrenOps {
  const ops = createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 500, ...extra });
  opened.push(ops);
  return ops;
}

async function startWorker(namespace: string, state: ChargeSwitch, retention = {}) {
  const warren = await testWarren({
    ...deadLogOptions(namespace),
    deadLetterLog: retention,
    handlers: [new Charge(state), new Refund(), new StalePing()],
  });
  await warren.start();
  return warren;
}

async function deadLetters(ops: WarrenOps, n: number, filter = {}) {
  return waitFor(
    async () => {
      const found = await ops.dead.search({ ...filter, state: 'dead' });
      return found.length >= n ? found : undefined;
    },
    { what: `${n} dead letters in the log`, intervalMs: 100 },
  );
}

describe('dead-letter log', () => {
  afterEach(async () => {
    // every stream is in the plans: the warrens' (cleanup) and the ops clients' (some tests apply only those)
    for (const ops of opened.splice(0)) {
      await ops.close();
      await deletePlanEntities(ops.plan);
    }
    await cleanup();
  });

  it('logs warren’s and the broker’s dead letters; pages read them again without consuming', async () => {
    const namespace = testNamespace('dlog');
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state);
    for (let i = 0; i < 5; i += 1)
      await warren.publish('billing.charge', { id: `c${i}`, customer: { id: `cu${i % 2}` } });
    // Nobody consumes `stale` fast enough? It has consumers; publish straight to a queue no one reads.
    const ops = opsFor(namespace);
    const letters = await deadLetters(ops, 5, { name: 'billing.charge' });
    assert.equal(letters[0]!.reason, 'attempts-exhausted');
    assert.equal(letters[0]!.errorClass, 'TypeError');
    assert.match(letters[0]!.error ?? '', /declined/);
    assert.equal(letters[0]!.queue, 'billing');

    const first = await ops.dead.page(undefined, 3);
    const again = await ops.dead.page(undefined, 3);
    assert.deepEqual(
      again.letters.map((l) => l.offset),
      first.letters.map((l) => l.offset),
    );
    assert.equal(first.letters.length, 3);
    const rest = await ops.dead.page(first.next, 50);
    assert.equal(rest.letters.length, 2);
    assert.deepEqual((await ops.dead.tail(2)).letters, rest.letters);

    const byField = await ops.dead.search({ field: { path: 'customer.id', equals: 'cu1' } });
    assert.deepEqual(byField.map((l) => (l.data as { id: string }).id).sort(), ['c1', 'c3']);
    assert.equal((await ops.dead.search({ error: 'CARD OF CU0' })).length, 3);
    assert.equal((await ops.dead.search({ since: new Date(Date.now() + 60_000) })).length, 0);
    const one = await ops.dead.search({ jobId: letters[2]!.jobId! });
    assert.deepEqual(
      one.map((l) => l.offset),
      [letters[2]!.offset],
    );
  });

  it('moves letters the broker dead-lettered (TTL) from the parking queue into the log', async () => {
    const namespace = testNamespace('dlog');
    const ops = opsFor(namespace);
    await ops.topology.apply();
    // No process runs: the job expires in `stale` and the broker parks it; `collect` moves it.
    await ops.publish('stale.ping', { n: 1 });
    await waitFor(async () => (await ops.queues()).find((q) => q.key === 'stale')!.dead === 1, {
      what: 'the expired job parked',
    });
    assert.equal(await ops.dead.collect(), 1);
    const [letter] = await ops.dead.search({ queue: 'stale' });
    assert.equal(letter?.reason, 'expired');
    assert.equal(letter?.name, 'stale.ping');
    assert.equal((await ops.queues()).find((q) => q.key === 'stale')!.dead, 0);
    assert.equal((await ops.dead.stats()).parked, 0);
  });

  it('replays letters that die again once each and ends; after the fix a replay runs them all', async () => {
    const namespace = testNamespace('dlog');
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state);
    for (let i = 0; i < 20; i += 1)
      await warren.publish('billing.charge', { id: `r${i}`, customer: { id: 'x' } });
    const ops = opsFor(namespace);
    const original = await deadLetters(ops, 20);

    const dry = await ops.dead.replay({ name: 'billing.charge' }, { dryRun: true });
    assert.deepEqual([dry.selected, dry.replayed, dry.dryRun], [20, 0, true]);

    // Still broken: every replayed job dies again at once; the replay still ends, each replayed once.
    const first = await ops.dead.replay({ name: 'billing.charge' }, { ratePerSecond: 0 });
    assert.deepEqual([first.selected, first.replayed, first.failed], [20, 20, 0]);
    const again = await deadLetters(ops, 20, { name: 'billing.charge' });
    assert.ok(again.every((l) => l.offset > first.upTo));
    assert.deepEqual(again.map((l) => l.replayOf).sort(), original.map((l) => l.offset).sort());
    const states = await ops.dead.search({ offsets: original.map((l) => l.offset) });
    assert.ok(states.every((l) => l.state === 'replayed'));

    state.fixed = true;
    const started = Date.now();
    const second = await ops.dead.replay({ name: 'billing.charge' }, { ratePerSecond: 40 });
    assert.equal(second.replayed, 20);
    assert.ok(Date.now() - started >= 450, 'paced to 40/s');
    await waitFor(() => state.ran.length === 20, { what: 'every replayed job to run' });
    assert.deepEqual(
      state.ran.map((r) => r.id).sort(),
      original.map((l) => (l.data as { id: string }).id).sort(),
    );
    assert.equal((await ops.dead.search({ state: 'dead' })).length, 0);
    await warren.close();
  });

  it('lets one replay of the same letters run at a time across processes: each letter runs once', async () => {
    const namespace = testNamespace('dlog');
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state);
    for (let i = 0; i < 30; i += 1)
      await warren.publish('billing.charge', { id: `p${i}`, customer: { id: 'x' } });
    // two operators, each with an index already built and following the log (their own connections)
    const [a, b] = [opsFor(namespace), opsFor(namespace)];
    await deadLetters(a, 30);
    await deadLetters(b, 30);
    state.fixed = true;

    const both = await Promise.allSettled([
      a.dead.replay({ name: 'billing.charge' }, { ratePerSecond: 100 }),
      b.dead.replay({ name: 'billing.charge' }, { ratePerSecond: 100 }),
    ]);
    const replayed = both.map((r) => (r.status === 'fulfilled' ? r.value.replayed : 0));
    assert.equal(replayed[0]! + replayed[1]!, 30, JSON.stringify(both));
    for (const r of both)
      if (r.status === 'rejected') {
        assert.ok(r.reason instanceof WarrenError, String(r.reason));
        assert.equal(r.reason.code, 'DEAD_LETTER_LOG_BUSY');
        assert.match(r.reason.message, /already running in another process/);
      }
    await waitFor(() => state.ran.length >= 30, { what: 'every replayed job to run' });
    // the loser, run again at once, finds nothing left: its index read the winner's markers first
    const after = await (replayed[0] === 30 ? b : a).dead.replay(
      { name: 'billing.charge' },
      { ratePerSecond: 0 },
    );
    assert.deepEqual([after.selected, after.replayed], [0, 0]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(state.ran.length, 30, 'no letter replayed twice');
    assert.equal(new Set(state.ran.map((r) => r.id)).size, 30);

    // in one process, a purge (or a second replay) while a replay runs is refused; a dry run is not
    state.fixed = false;
    for (let i = 0; i < 5; i += 1)
      await warren.publish('billing.charge', { id: `q${i}`, customer: { id: 'x' } });
    await deadLetters(a, 5);
    const slow = a.dead.replay({ name: 'billing.charge' }, { ratePerSecond: 20 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await assert.rejects(a.dead.purge({ name: 'billing.charge' }), (error: unknown) => {
      assert.ok(error instanceof WarrenError, String(error));
      assert.equal(error.code, 'DEAD_LETTER_LOG_BUSY');
      assert.match(error.message, /already running in this process/);
      return true;
    });
    assert.equal((await a.dead.replay({ name: 'billing.charge' }, { dryRun: true })).dryRun, true);
    assert.equal((await slow).replayed, 5);
    await deadLetters(a, 5); // they died again
    assert.equal((await a.dead.purge({ name: 'billing.charge' })).purged, 5); // the lock was given back
    await warren.close();
  });

  it('replays into another queue, purges by marker, and refuses an unknown queue', async () => {
    const namespace = testNamespace('dlog');
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state);
    for (let i = 0; i < 4; i += 1)
      await warren.publish('billing.charge', { id: `q${i}`, customer: { id: 'y' } });
    const ops = opsFor(namespace);
    const letters = await deadLetters(ops, 4);
    state.fixed = true;
    await assert.rejects(ops.dead.replay({}, { to: 'nope' }), UnknownQueueError);
    // billing-retry's workers do not run billing.charge: they would park it again as wrong-queue
    await assert.rejects(
      ops.dead.replay({ offsets: [letters[0]!.offset] }, { to: 'billing-retry' }),
      (error: Error) =>
        error instanceof ConfigurationError && /belongs to queue 'billing'/.test(error.message),
    );
    const moved = await ops.dead.replay({ offsets: [letters[0]!.offset] }, { to: 'billing' });
    assert.equal(moved.replayed, 1);
    await waitFor(() => state.ran.length === 1, { what: 'the job replayed into billing' });
    assert.deepEqual(state.ran[0], { id: 'q0', queue: 'billing', replayOf: letters[0]!.offset });

    const purged = await ops.dead.purge({ name: 'billing.charge' });
    assert.equal(purged.purged, 3);
    assert.equal((await ops.dead.replay({ name: 'billing.charge' })).selected, 0);
  });

  it('a restarted process rebuilds the index from the log: same letters, same states', async () => {
    const namespace = testNamespace('dlog');
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state);
    for (let i = 0; i < 6; i += 1)
      await warren.publish('billing.charge', { id: `s${i}`, customer: { id: 'z' } });
    const before = opsFor(namespace);
    const letters = await deadLetters(before, 6);
    state.fixed = true;
    await before.dead.replay({ offsets: letters.slice(0, 2).map((l) => l.offset) });
    await before.dead.purge({ offsets: [letters[5]!.offset] });
    const expected = await before.dead.search({});
    await before.close();

    const after = opsFor(namespace);
    const rebuilt = await after.dead.search({});
    assert.deepEqual(
      rebuilt.map((l) => [l.offset, l.state]),
      expected.map((l) => [l.offset, l.state]),
    );
    assert.deepEqual((await after.dead.stats()).byState, { dead: 3, replayed: 2, purged: 1 });
  });

  it('retention drops old segments and says up to which offset the log expired', async () => {
    const namespace = testNamespace('dlog');
    const retention = { maxBytes: 60_000, segmentBytes: 20_000 };
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state, retention);
    const ops = opsFor(namespace, { deadLetterLog: retention });
    const watching = await ops.dead.stats();
    assert.equal(watching.expiredBefore, 0);
    const pad = 'p'.repeat(1000);
    const publish = async (from: number, to: number) => {
      for (let i = from; i < to; i += 1)
        await warren.publish('billing.charge', { id: `e${i}`, customer: { id: pad } });
    };
    // The index sees the first letters while they are dead, then retention drops them.
    await publish(0, 10);
    await deadLetters(ops, 10);
    await publish(10, 150);
    await waitFor(
      async () => {
        const s = await ops.dead.stats();
        const newest = await ops.dead.search({ field: { path: 'id', equals: 'e149' } });
        return s.expiredBefore > 0 && newest.length === 1 ? s : undefined;
      },
      { what: 'retention to drop a segment', timeoutMs: 20_000, intervalMs: 200 },
    );
    const stats = await ops.dead.stats();
    const page = await ops.dead.page(undefined, 1);
    const kept = await ops.dead.search({});
    assert.equal(page.letters[0]!.offset, stats.expiredBefore);
    // Offsets are not dense (the broker's segment headers take some); what is kept is every letter from
    // the first kept offset on, up to the newest.
    assert.ok(kept.every((l) => l.offset >= stats.expiredBefore));
    assert.equal(stats.letters, kept.length);
    assert.ok(kept.some((l) => (l.data as { id: string }).id === 'e149'));
    // The ten it watched while dead are counted; those appended and dropped between two reads are not.
    assert.ok(stats.expiredDead >= 10 && stats.expiredDead <= 150 - kept.length, String(stats.expiredDead));
    assert.equal(stats.keptSince?.getTime(), kept[0]!.deadAt);
  });
});

describe('warren dead', () => {
  afterEach(cleanup);

  function deadConfig(namespace: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'warren-dead-'));
    const fixture = join(ROOT, 'dist', 'test', 'fixtures', 'dead-log-jobs.js');
    writeFileSync(
      join(dir, 'warren.config.js'),
      `module.exports = require(${JSON.stringify(fixture)}).deadLogOptions(${JSON.stringify(namespace)});\n`,
    );
    return dir;
  }

  it('lists, shows, searches, replays after asking, and purges, with --json', async () => {
    const namespace = testNamespace('dcli');
    const state = new ChargeSwitch();
    const warren = await startWorker(namespace, state);
    for (let i = 0; i < 3; i += 1)
      await warren.publish('billing.charge', { id: `k${i}`, customer: { id: `n${i}` } });
    const cwd = deadConfig(namespace);
    const search = async (...args: string[]) => {
      const run = await runCli(['dead', 'search', '--json', ...args], { cwd });
      assert.equal(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as { offset: number; state: string; jobId: string }[];
    };
    const letters = await waitFor(
      async () => ((await search('--name', 'billing.charge')).length === 3 ? search() : undefined),
      {
        what: 'three letters through the CLI',
        intervalMs: 200,
      },
    );
    assert.deepEqual((await search('--field', 'customer.id=n1')).length, 1);

    const ls = await runCli(['dead', 'ls'], { cwd });
    assert.match(ls.stdout, /OFFSET\s+DIED\s+QUEUE/);
    assert.equal(ls.stdout.trim().split('\n').length, 4);
    const show = await runCli(['dead', 'show', String(letters[1]!.offset), '--json'], { cwd });
    assert.equal(JSON.parse(show.stdout).errorClass, 'TypeError');

    const dry = await runCli(['dead', 'replay', '--name', 'billing.charge', '--dry-run'], { cwd });
    assert.match(dry.stdout, /would replay 3 dead letter/);
    const refused = await runCli(['dead', 'replay', '--name', 'billing.charge'], { cwd });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refusing to replay without --yes/);

    state.fixed = true;
    const replay = await runCli(
      ['dead', 'replay', '--offset', String(letters[0]!.offset), '--yes', '--json'],
      { cwd },
    );
    assert.equal(JSON.parse(replay.stdout).replayed, 1, replay.stderr);
    await waitFor(() => state.ran.length === 1, { what: 'the replayed job' });
    const purge = await runCli(['dead', 'purge', '--yes'], { cwd });
    assert.match(purge.stdout, /purged 2 dead letter/);
    assert.deepEqual(
      (await search()).map((l) => l.state),
      ['replayed', 'purged', 'purged'],
    );
  });
});
