import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  Cron,
  defineTopology,
  Job,
  UnknownScheduleError,
  type JobContext,
  type JobHandler,
  type Warren,
} from '../../src';
import { opsAppOptions, SendEmail, BuildReport, type JobLog } from '../fixtures/ops-jobs';
import { configDir, runCli } from '../support/run-cli';
import {
  cleanup,
  rawConnection,
  testNamespace,
  testWarren,
  closeConnectionsNamed,
} from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { createRecordingLogger } from '../../src/testing';

const topology = defineTopology({ queues: { ticks: {} } });
const runs: { jobId: string; data: unknown; at: number }[] = [];

@Job('clock.tick', { queue: 'ticks', attempts: 1 })
class Tick implements JobHandler<{ from: string }> {
  async handle(data: { from: string }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data, at: Date.now() });
  }
}

@Cron('* * * * * *', { id: 'coded', data: { from: 'code' } })
@Job('clock.coded', { queue: 'ticks', attempts: 1 })
class Coded implements JobHandler<{ from: string }> {
  async handle(data: { from: string }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data, at: Date.now() });
  }
}

const runsOf = (id: string) => runs.filter((r) => r.jobId.startsWith(`${id}@`));
const scheduled = (id: string) => runsOf(id).filter((r) => !r.jobId.includes('@manual-'));

/**
 * The signal that a paused or removed schedule stayed quiet: a witness schedule, firing every second on
 * the same leader into the same queue, fired `ticks` more times; had the other one still fired, it would
 * have fired beside it.
 */
async function witnessTicks(ticks: number): Promise<void> {
  const from = scheduled('witness').length;
  await waitFor(() => scheduled('witness').length >= from + ticks, {
    timeoutMs: 20_000,
    what: `${ticks} more ticks of the witness schedule`,
  });
}

/** Adds the witness schedule (through `warren`) and waits until it fires. */
async function addWitness(warren: { cron: Pick<Warren<object>['cron'], 'add'> }): Promise<void> {
  await warren.cron.add('clock.tick', '* * * * * *', { from: 'witness' }, { id: 'witness' });
  await waitFor(() => scheduled('witness').length >= 1, { timeoutMs: 20_000, what: 'the witness to fire' });
}

/** A process that schedules (scheduler enabled) and runs the ticks. */
async function scheduler(namespace: string, handlers: object[] = [new Tick()]) {
  const warren = await testWarren({ namespace, topology, handlers, scheduler: { enabled: true } });
  await warren.start();
  return warren;
}

/** The registry stream is state, not topology: tests delete it themselves. */
async function deleteRegistry(namespace: string) {
  const connection = await rawConnection();
  const channel = await connection.createChannel();
  await channel.deleteQueue(`${namespace}.warren.schedules`).catch(() => undefined);
  await connection.close();
}

describe('cron at run time: the schedule registry', () => {
  const namespaces: string[] = [];
  const ns = (label: string) => {
    const namespace = testNamespace(label);
    namespaces.push(namespace);
    return namespace;
  };
  afterEach(async () => {
    await cleanup();
    for (const namespace of namespaces.splice(0)) await deleteRegistry(namespace);
    runs.length = 0;
  });
  after(cleanup);

  it('fires a schedule added in another process; pause stops it, resume restarts it, remove ends it', async () => {
    const namespace = ns('reg');
    const leader = await scheduler(namespace);
    await waitFor(() => leader.cron.isLeader, { what: 'A to lead' });
    const other = await testWarren({ namespace, topology, jobs: [Tick] });
    await other.cron.add('clock.tick', '* * * * * *', { from: 'B' }, { id: 'added' });
    await waitFor(() => scheduled('added').length >= 2, { what: 'two ticks fired by A' });
    await addWitness(other);
    assert.deepEqual(runsOf('added')[0]!.data, { from: 'B' });
    assert.equal(leader.cron.list().find((s) => s.id === 'added')?.source, 'registry');

    await other.cron.pause('added');
    await waitFor(() => leader.cron.list().find((s) => s.id === 'added')?.paused === true, {
      what: 'A to see the pause',
    });
    const atPause = scheduled('added').length;
    await witnessTicks(3);
    assert.ok(scheduled('added').length <= atPause + 1, 'at most the tick under way fired while paused');

    await other.cron.resume('added');
    const resumedWith = scheduled('added').length;
    await waitFor(() => scheduled('added').length >= resumedWith + 2, { what: 'ticks after resume' });

    await other.cron.remove('added');
    await waitFor(() => leader.cron.list().every((s) => s.id !== 'added'), { what: 'A to drop it' });
    const removedWith = scheduled('added').length;
    await witnessTicks(3);
    assert.ok(scheduled('added').length <= removedWith + 1);
  });

  it('warns when a schedule is added while no process runs the scheduler, and not once one does', async () => {
    const namespace = ns('nosched');
    const recording = createRecordingLogger('warn');
    const publisher = await testWarren({ namespace, topology, jobs: [Tick], logger: recording.logger });
    const warnings = () => recording.entries.filter((e) => e.msg.includes('no process runs the scheduler'));
    await publisher.cron.add('clock.tick', '* * * * * *', { from: 'P' }, { id: 'lonely' });
    assert.equal(warnings().length, 1, 'stored, and the user is told it fires nothing yet');
    assert.equal(warnings()[0]!.scheduleId, 'lonely');

    const leader = await scheduler(namespace);
    await waitFor(() => leader.cron.isLeader, { what: 'a scheduler to lead' });
    await waitFor(() => scheduled('lonely').length >= 1, {
      what: 'the stored schedule to fire once one runs',
    });
    await publisher.cron.add('clock.tick', '* * * * * *', { from: 'P' }, { id: 'lonely' });
    assert.equal(warnings().length, 1, 'no warning while a scheduler runs');
  });

  it('pauses a schedule declared in code in every process, and refuses to replace or remove it', async () => {
    const namespace = ns('regc');
    const leader = await scheduler(namespace, [new Tick(), new Coded()]);
    await waitFor(() => scheduled('coded').length >= 1, { what: 'the coded schedule to fire' });
    await addWitness(leader);
    await leader.cron.pause('coded');
    const atPause = scheduled('coded').length;
    await witnessTicks(3);
    assert.ok(scheduled('coded').length <= atPause + 1);
    await assert.rejects(leader.cron.remove('coded'), ConfigurationError);
    await assert.rejects(
      leader.cron.add('clock.tick', '* * * * * *', { from: 'x' }, { id: 'coded' }),
      ConfigurationError,
    );
    // A process started later reads the pause before it could fire.
    await leader.close();
    const later = await scheduler(namespace, [new Tick(), new Coded()]);
    await waitFor(() => later.cron.isLeader, { what: 'the later process to lead' });
    assert.equal(later.cron.list().find((s) => s.id === 'coded')?.paused, true);
    await later.cron.resume('coded');
    const resumedWith = scheduled('coded').length;
    await waitFor(() => scheduled('coded').length >= resumedWith + 1, { what: 'a tick after resume' });
  });

  it('keeps run-time schedules for the next leader and for a process started later', async () => {
    const namespace = ns('regf');
    const first = await scheduler(namespace);
    await waitFor(() => first.cron.isLeader, { what: 'the first to lead' });
    const second = await scheduler(namespace);
    await first.cron.add('clock.tick', '* * * * * *', { from: 'first' }, { id: 'kept' });
    await waitFor(() => scheduled('kept').length >= 1, { what: 'a tick under the first leader' });
    await first.close();
    await waitFor(() => second.cron.isLeader, { what: 'the second to lead' });
    const takeover = Date.now();
    await waitFor(() => scheduled('kept').some((r) => r.at > takeover + 100), {
      what: 'a tick fired by the second leader',
    });
    const third = await testWarren({ namespace, topology, jobs: [Tick], scheduler: { enabled: true } });
    const startedAt = Date.now();
    await third.start();
    console.log(`# start with the registry read to its end: ${Date.now() - startedAt} ms`);
    assert.deepEqual(
      third.cron.list().map((s) => [s.id, s.source, s.pattern]),
      [['kept', 'registry', '* * * * * *']],
    );
  });

  it('applies a pause written while the leader was disconnected before it fires again', async () => {
    const namespace = ns('regr');
    const leader = await testWarren({
      namespace,
      topology,
      handlers: [new Tick()],
      scheduler: { enabled: true },
      connection: { connectionName: `warren-test ${namespace} leader` },
    });
    await leader.start();
    const other = await testWarren({ namespace, topology, jobs: [Tick] });
    await other.cron.add('clock.tick', '* * * * * *', { from: 'B' }, { id: 'rc' });
    await waitFor(() => scheduled('rc').length >= 1, { what: 'a tick before the reconnect' });
    await addWitness(other);
    const lost = nextEvent(leader, 'disconnected', () => true, 15_000);
    const back = nextEvent(leader, 'connected', () => true, 15_000);
    assert.ok((await closeConnectionsNamed(`${namespace} leader`)) >= 1);
    await lost;
    await other.cron.pause('rc');
    const pausedAt = Date.now();
    await back;
    await waitFor(() => leader.cron.isLeader, { what: 'the leader to lead again' });
    assert.equal(leader.cron.list().find((s) => s.id === 'rc')?.paused, true);
    await witnessTicks(3);
    // Counted by the tick each run is for (its job id), not by when it ran: a tick fired before the
    // disconnect may still run after the reconnect (redelivered, or published from the confirm buffer).
    // Only the tick under way when the pause was written may be later than the pause.
    const firedAfterPause = scheduled('rc').filter(
      (r) => Date.parse(r.jobId.slice('rc@'.length)) > pausedAt + 1_000,
    );
    assert.deepEqual(
      firedAfterPause.map((r) => r.jobId),
      [],
      'no tick of the paused schedule fired after the reconnect',
    );
  });

  it('triggers a schedule once, at once, with a manual job id, without a leader', async () => {
    const namespace = ns('regt');
    const runner = await testWarren({ namespace, topology, handlers: [new Tick()] });
    await runner.start();
    await runner.cron.add('clock.tick', '0 0 1 1 *', { from: 'yearly' }, { id: 'yearly' });
    const before = Date.now();
    const triggered = await runner.cron.trigger('yearly');
    console.log(`# trigger-now in a process that does not follow the registry: ${Date.now() - before} ms`);
    assert.match(triggered.jobId, /^yearly@manual-\d+$/);
    await waitFor(() => runsOf('yearly').length === 1, { what: 'the triggered run' });
    assert.equal(runsOf('yearly')[0]!.jobId, triggered.jobId);
    assert.deepEqual(runsOf('yearly')[0]!.data, { from: 'yearly' });
    assert.ok(Number(triggered.jobId.split('-').at(-1)) >= before);
    await assert.rejects(runner.cron.trigger('nope'), UnknownScheduleError);
  });

  it('validates before writing, and ignores a foreign record in the stream', async () => {
    const namespace = ns('regv');
    const leader = await scheduler(namespace);
    await assert.rejects(leader.cron.add('clock.tick', 'not a cron', {}, { id: 'bad' }), ConfigurationError);
    await assert.rejects(
      leader.cron.add('clock.tick', '* * * * *', {}, { id: 'bad', tz: 'Mars/Base' }),
      ConfigurationError,
    );
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    for (const body of [
      'not json',
      '{"v":1,"id":"x","action":"explode"}',
      '{"v":1,"id":"y","action":"upsert"}',
    ])
      channel.sendToQueue(`${namespace}.warren.schedules`, Buffer.from(body));
    await channel.waitForConfirms();
    await connection.close();
    await leader.cron.add('clock.tick', '* * * * * *', { from: 'after' }, { id: 'after' });
    await waitFor(() => scheduled('after').length >= 1, { what: 'a tick after the foreign records' });
    assert.deepEqual(
      leader.cron.list().map((s) => s.id),
      ['after'],
    );
  });
});

describe('cron at run time from the warren command', () => {
  const namespace = testNamespace('regcli');
  after(async () => {
    await cleanup();
    await deleteRegistry(namespace);
  });

  it('adds a schedule the leader fires, triggers one at once, and asks before rm', async () => {
    const log: JobLog = [];
    const worker = await testWarren({
      ...opsAppOptions(namespace),
      handlers: [new SendEmail(log), new BuildReport()],
      scheduler: { enabled: true },
    });
    await worker.start();
    await waitFor(() => worker.cron.isLeader, { what: 'the worker to lead' });
    const cwd = configDir(namespace);
    const every = JSON.stringify({ id: 'every', ms: 0 });
    const added = await runCli(
      ['schedules', 'add', 'email.send', '* * * * * *', every, '--id', 'ev', '--json'],
      {
        cwd,
      },
    );
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual(JSON.parse(added.stdout), { id: 'ev', action: 'upsert', isFired: true });
    await waitFor(() => log.filter((e) => e.event === 'done' && e.id === 'every').length >= 2, {
      what: 'two firings of the schedule added by the CLI',
    });

    const yearly = JSON.stringify({ id: 'yearly', ms: 0 });
    const bad = await runCli(['schedules', 'add', 'email.send', '0 0 1 1 *', yearly, '--tz', 'Mars/Base'], {
      cwd,
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /tz.*Mars\/Base.*\[CONFIGURATION_INVALID\]/);
    assert.equal(
      (await runCli(['schedules', 'add', 'email.send', '0 0 1 1 *', yearly, '--id', 'yr'], { cwd })).code,
      0,
    );
    const triggered = await runCli(['schedules', 'trigger', 'yr', '--json'], { cwd });
    assert.equal(triggered.code, 0, triggered.stderr);
    assert.match(JSON.parse(triggered.stdout).jobId, /^yr@manual-\d+$/);
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'yearly'), {
      what: 'the triggered run',
    });

    const refused = await runCli(['schedules', 'rm', 'ev'], { cwd });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /without --yes/);
    assert.equal((await runCli(['schedules', 'rm', 'ev', '--yes'], { cwd })).code, 0);
    await waitFor(() => worker.cron.list().every((s) => s.id !== 'ev'), { what: 'the leader to drop it' });
    assert.equal(log.filter((e) => e.id === 'yearly').length, 2, 'one start and one done');
  });
});
