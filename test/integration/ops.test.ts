import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Cron, Job, type JobHandler, type Warren } from '../../src';
import { planOf } from '../../src/warren';
import { createOps, ManagementApiError, UnknownQueueError, type WarrenOps } from '../../src/ops';
import { WARREN_VERSION } from '../../src/core';
import { BuildReport, opsAppOptions, SendEmail, type JobLog } from '../fixtures/ops-jobs';
import {
  cleanup,
  deletePlanEntities,
  MANAGEMENT_URL,
  rawConnection,
  testNamespace,
  testWarren,
} from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { createRecordingLogger } from '../../src/testing';

const opened: WarrenOps[] = [];

function opsFor(namespace: string): WarrenOps {
  const ops = createOps({ ...opsAppOptions(namespace), replyTimeoutMs: 700 });
  opened.push(ops);
  return ops;
}

/**
 * For the tests that count who confirmed a pause: with the management API an ask ends once every listening
 * process answered, and the long timeout is for a loaded CI machine, where a reply can take over 700 ms.
 */
function pausingOps(namespace: string): WarrenOps {
  const ops = createOps({
    ...opsAppOptions(namespace),
    management: { url: MANAGEMENT_URL },
    replyTimeoutMs: 5_000,
  });
  opened.push(ops);
  return ops;
}

async function startWorkers(namespace: string, n: number, log: JobLog): Promise<Warren[]> {
  const warrens: Warren[] = [];
  for (let i = 0; i < n; i += 1) {
    const warren = await testWarren({
      ...opsAppOptions(namespace),
      handlers: [new SendEmail(log), new BuildReport()],
    });
    await warren.start();
    warrens.push(warren);
  }
  return warrens;
}

describe('warren/ops against the broker', () => {
  afterEach(async () => {
    for (const ops of opened.splice(0)) {
      await ops.close();
    }
    await cleanup();
  });
  after(() => undefined);

  it('lists the processes with their id, pid, version and queues', async () => {
    const namespace = testNamespace('ops');
    const warrens = await startWorkers(namespace, 3, []);
    const { processes, silent } = await opsFor(namespace).processes();
    assert.equal(silent, undefined);
    assert.deepEqual(processes.map((p) => p.id).sort(), warrens.map((w) => w.processId).sort());
    for (const p of processes) {
      assert.equal(p.pid, process.pid);
      assert.equal(p.version, WARREN_VERSION);
      assert.deepEqual(p.queues.map((q) => q.key).sort(), ['email', 'report']);
      assert.ok(p.queues.every((q) => q.consuming && !q.paused));
      assert.equal(p.isLeader, false);
    }
  });

  it('lists no processes for a namespace nobody runs, without declaring anything', async () => {
    assert.deepEqual((await opsFor(testNamespace('ops')).processes()).processes, []);
  });

  it('pauses a queue in every process, lets the running job finish, and resumes it', async () => {
    const namespace = testNamespace('ops');
    const log: JobLog = [];
    const warrens = await startWorkers(namespace, 3, log);
    const ops = pausingOps(namespace);
    await ops.publish('email.send', { id: 'slow', ms: 2500 });
    await waitFor(() => log.some((e) => e.event === 'start' && e.id === 'slow'), { what: 'the slow job' });

    const paused = await ops.pause('email');
    assert.equal(paused.paused, true);
    assert.deepEqual(paused.confirmed.map((p) => p.id).sort(), warrens.map((w) => w.processId).sort());
    assert.deepEqual(paused.unconfirmed, []);
    assert.ok(!log.some((e) => e.event === 'done' && e.id === 'slow'), 'the pause did not wait for the job');
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'slow'), {
      what: 'the job to finish',
    });

    await ops.publish('email.send', { id: 'held', ms: 1 });
    const [email, report] = await ops.queues();
    assert.deepEqual(
      { key: email!.key, paused: email!.paused, ready: email!.ready, consumers: email!.consumers },
      { key: 'email', paused: true, ready: 1, consumers: 0 },
    );
    assert.equal(report!.paused, false);
    assert.equal(report!.consumers, 3);
    for (const w of warrens)
      assert.equal(w.health().consumers.find((c) => c.queue === 'email')!.paused, true);

    const resumed = await ops.resume('email');
    assert.equal(resumed.paused, false);
    assert.equal(resumed.confirmed.length, 3);
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'held'), { what: 'the held job' });
    assert.equal((await ops.queues())[0]!.paused, false);
  });

  it('keeps a process that starts during the pause paused, because the state is on the broker', async () => {
    const namespace = testNamespace('ops');
    const log: JobLog = [];
    await startWorkers(namespace, 1, log);
    const ops = pausingOps(namespace);
    await ops.pause('email');
    const [late] = await startWorkers(namespace, 1, log);
    assert.equal(late!.health().consumers.find((c) => c.queue === 'email')!.paused, true);
    await ops.publish('email.send', { id: 'waits', ms: 1 });
    assert.equal((await ops.queues())[0]!.consumers, 0);
    const resumed = await ops.resume('email');
    assert.equal(resumed.confirmed.length, 2);
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'waits'), { what: 'the job' });
  });

  it('stays paused when the pause comes while its consumer is still being set up', async () => {
    const namespace = testNamespace('ops');
    const log: JobLog = [];
    const warren = await testWarren({
      ...opsAppOptions(namespace),
      handlers: [new SendEmail(log), new BuildReport()],
    });
    // start() sends basic.consume; the pause lands before the broker's consume-ok
    const started = warren.start();
    await warren.pauseLocal('email');
    await started;
    const ops = opsFor(namespace);
    await ops.publish('email.send', { id: 'held', ms: 1 });
    const [email] = await ops.queues();
    assert.equal(email!.consumers, 0, 'no consumer left on the paused queue');
    await warren.resumeLocal('email');
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'held'), {
      what: 'the job after resume',
    });
  });

  it('combines an operator pause with code pauses: the queue runs only when nobody holds it', async () => {
    const namespace = testNamespace('ops');
    const [warren] = await startWorkers(namespace, 1, []);
    const ops = pausingOps(namespace);
    await warren!.pauseLocal('email');
    await ops.pause('email');
    await ops.resume('email');
    const state = () => warren!.health().consumers.find((c) => c.queue === 'email')!;
    assert.equal(state().paused, true, 'code still holds it');
    const { processes } = await ops.processes();
    assert.deepEqual(processes[0]!.queues.find((q) => q.key === 'email')!.holders, ['user']);
    await warren!.resumeLocal('email');
    assert.equal(state().paused, false);
  });

  it('refuses an unknown queue with UNKNOWN_QUEUE, naming the declared ones', async () => {
    const ops = opsFor(testNamespace('ops'));
    await assert.rejects(ops.pause('emial'), (error: unknown) => {
      assert.ok(error instanceof UnknownQueueError);
      assert.equal(error.code, 'UNKNOWN_QUEUE');
      assert.match(error.message, /declared: email, report/);
      return true;
    });
  });

  it('publishes a job that a worker runs', async () => {
    const namespace = testNamespace('ops');
    const log: JobLog = [];
    await startWorkers(namespace, 1, log);
    const published = await opsFor(namespace).publish('email.send', { id: 'from-ops', ms: 1 });
    assert.ok(published.jobId);
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'from-ops'), { what: 'the job' });
  });

  it('lists the schedules the processes hold, with the next fire time and the leader firing them', async () => {
    const namespace = testNamespace('ops');
    const warren = await testWarren({
      ...opsAppOptions(namespace),
      handlers: [new BuildReport()],
      scheduler: { enabled: true },
    });
    await warren.start();
    await warren.schedule('report.build', '0 9 * * *', {}, { tz: 'Asia/Tokyo' });
    await waitFor(() => warren.isLeader, { what: 'leadership' });
    const [schedule] = await opsFor(namespace).schedules();
    assert.equal(schedule!.id, 'report.build');
    assert.equal(schedule!.tz, 'Asia/Tokyo');
    assert.deepEqual(schedule!.heldBy, [warren.processId]);
    assert.equal(schedule!.firedBy, warren.processId);
    assert.equal(schedule!.nextFireAt.getTime(), warren.schedules()[0]!.nextFireAt.getTime());
  });

  it('lists the schedules the config declares even when no process holds them', async () => {
    const ops = createOps({
      ...opsAppOptions(testNamespace('ops')),
      jobs: [SendEmail, BuildReport, NightlyReport],
      replyTimeoutMs: 300,
    });
    opened.push(ops);
    const [nightly] = await ops.schedules();
    assert.deepEqual(
      { id: nightly!.id, heldBy: nightly!.heldBy, declared: nightly!.declared, tz: nightly!.tz },
      { id: 'report.nightly', heldBy: [], declared: true, tz: 'Europe/Paris' },
    );
    assert.ok(nightly!.nextFireAt.getTime() > Date.now());
    const hour = new Intl.DateTimeFormat('en', {
      timeZone: 'Europe/Paris',
      hour: 'numeric',
      hourCycle: 'h23',
    });
    assert.equal(hour.format(nightly!.nextFireAt), '03');
  });

  it('ignores malformed control messages and keeps answering', async () => {
    const namespace = testNamespace('ops');
    const { logger, entries } = createRecordingLogger('warn');
    const warren = await testWarren({ ...opsAppOptions(namespace), handlers: [new SendEmail([])], logger });
    await warren.start();
    const connection = await rawConnection();
    try {
      const channel = await connection.createChannel();
      const exchange = planOf(warren!).naming.controlExchange();
      const replyTo = 'amq.rabbitmq.reply-to';
      await channel.consume(replyTo, () => undefined, { noAck: true });
      const send = (body: string | Buffer, props: object = { replyTo, correlationId: randomUUID() }) =>
        channel.publish(exchange, '', Buffer.isBuffer(body) ? body : Buffer.from(body), props);
      send('not json');
      send('[1,2]');
      send(JSON.stringify({ v: 2, command: 'status' }));
      send(JSON.stringify({ v: 1, command: 'shutdown' }));
      send(JSON.stringify({ v: 1, command: 'sync-pause', queue: '../../etc' }));
      send(JSON.stringify({ v: 1, command: 'status' }), { correlationId: 'x' }); // no reply address
      send(JSON.stringify({ v: 1, command: 'status' }), { replyTo: 'some.queue', correlationId: 'x' });
      send(Buffer.alloc(100_000, 0x20));
      // Well-formed, but forged: no operator paused email (no marker), so the process keeps consuming.
      send(JSON.stringify({ v: 1, command: 'sync-pause', queue: 'email' }));
      await channel.close();
    } finally {
      await connection.close();
    }
    const { processes } = await opsFor(namespace).processes();
    assert.deepEqual(
      processes.map((p) => p.id),
      [warren!.processId],
    );
    assert.equal(warren!.health().healthy, true);
    assert.equal(warren!.health().consumers.find((c) => c.queue === 'email')!.paused, false);
    // Counted per reason, logged once (a flood of them must not flood the log).
    assert.deepEqual(warren!.health().records.byRole['control-request'], { malformed: 7, 'too-large': 1 });
    const logged = entries.filter(
      (e) => e.msg === 'skipped a record of control-request that warren cannot trust',
    );
    assert.equal(logged.length, 1);
  });

  it('needs the management API for diff and verify, and says so', async () => {
    const ops = opsFor(testNamespace('ops'));
    for (const call of [ops.topology.diff(), ops.topology.verify()])
      await assert.rejects(call, (error: unknown) => {
        assert.ok(error instanceof ManagementApiError);
        assert.equal(error.code, 'MANAGEMENT_NOT_CONFIGURED');
        return true;
      });
  });

  it('applies the plan (declaring what is missing) and lists the planned entities offline', async () => {
    const namespace = testNamespace('ops');
    const ops = opsFor(namespace);
    const entries = ops.topology.plan();
    assert.ok(entries.some((e) => e.entity === 'queue' && e.name === `${namespace}.email`));
    assert.ok(entries.some((e) => e.entity === 'exchange' && e.name === `${namespace}.warren.control`));
    try {
      assert.deepEqual(await ops.topology.apply(), { created: undefined });
      const queues = await ops.queues();
      assert.ok(queues.every((q) => q.exists && q.ready === 0));
    } finally {
      await deletePlanEntities(ops.plan);
    }
  });

  it("plans, diffs and verifies warren's own streams like every queue, and deleteTopology leaves none", async () => {
    const namespace = testNamespace('ops');
    const history = { maxAgeMs: 3_600_000, maxBytes: 64 * 1024 ** 2, segmentBytes: 4 * 1024 ** 2 };
    const warren = await testWarren({
      ...opsAppOptions(namespace),
      handlers: [new SendEmail([]), new BuildReport()],
      history: { ...history, flushMs: 20 },
      deadLetterLog: {},
    });
    await warren.start();
    const management = { url: MANAGEMENT_URL };
    const ops = createOps({ ...opsAppOptions(namespace), history, deadLetterLog: {}, management });
    opened.push(ops);
    const streams = [
      'job-control',
      'job-control.checkpoints',
      'schedules',
      'schedules.checkpoints',
      'dead-log',
      'history',
    ].map((s) => `${namespace}.warren.${s}`);
    const rows = ops.topology.plan().filter((e) => e.settings.startsWith('stream '));
    assert.deepEqual(
      rows.map((e) => `${e.entity} ${e.name}`),
      streams.map((name) => `queue ${name}`),
    );
    assert.match(rows[5]!.settings, /x-queue-type="stream" x-max-age="3600s" x-max-length-bytes=67108864/);
    assert.equal(
      rows[2]!.settings,
      'stream durable x-queue-type="stream"',
      'the registry keeps every record',
    );

    assert.deepEqual((await ops.topology.diff()).drift, [], 'the streams the worker declared are planned');
    const report = await ops.topology.verify();
    assert.equal(report.ok, true, JSON.stringify(report.checks.filter((c) => !c.ok)));
    for (const name of streams)
      assert.deepEqual(
        report.checks.filter((c) => c.subject === name).map((c) => `${c.check} ${c.ok}`),
        ['exists true', 'queue type true'],
      );

    // Retention is compared like any argument; a history the ops config does not plan is extra.
    const shorter = createOps({
      deadLetterLog: {},
      ...opsAppOptions(namespace),
      history: { ...history, maxAgeMs: 60_000 },
      management,
    });
    const noHistory = createOps({ ...opsAppOptions(namespace), deadLetterLog: {}, management });
    opened.push(shorter, noHistory);
    assert.deepEqual(
      (await shorter.topology.diff()).drift.map((d) => `${d.kind} ${d.name} ${d.differences.join('; ')}`),
      [`different ${streams[5]} x-max-age: planned "60s", broker "3600s"`],
    );
    assert.deepEqual(
      (await noHistory.topology.diff()).drift.map((d) => `${d.kind} ${d.entity} ${d.name}`),
      [`extra queue ${streams[5]}`],
    );

    await warren.deleteTopology();
    const left = (await ops.topology.diff()).drift;
    assert.ok(left.length > 0 && left.every((d) => d.kind === 'missing'), JSON.stringify(left));
    for (const name of streams)
      assert.ok(
        left.some((d) => d.name === name),
        `${name} deleted`,
      );
  });
});

@Job('report.nightly', { queue: 'report' })
@Cron('0 3 * * *', { tz: 'Europe/Paris' })
class NightlyReport implements JobHandler<object> {
  handle(): void {}
}
