import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import {
  Cron,
  defineTopology,
  Job,
  UnrecoverableError,
  type JobContext,
  type JobHandler,
  type Warren,
} from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { encodeBlock, readToEnd } from '../../src/streams';
import { planOf } from '../../src/warren';
import {
  createBrokerUser,
  DEFAULT_EXCHANGE_ONLY,
  deleteBrokerUser,
  writeOnly,
  type BrokerUser,
} from '../support/broker-user';
import {
  BROKER_URL,
  cleanup,
  deletePlanEntities,
  rawConnection,
  testNamespace,
  testWarren,
} from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';

/**
 * warren's own records, forged by another broker user (README, "What warren trusts"). Through the
 * default exchange RabbitMQ checks write on `amq.default` only, so that user appends to every stream of
 * every namespace on the vhost. Each forgery has its positive twin in the same test: warren's own record
 * of the same kind still applies.
 */
const KEY = 'trusted-records-test-key-0123456789abcdef';
const topology = defineTopology({ queues: { reports: {}, ticks: {} } });
const runs: { jobId: string; data: unknown }[] = [];
const ranIds = () => runs.map((r) => r.jobId);

@Job('report.build', { queue: 'reports', attempts: 1 })
class BuildReport implements JobHandler<{ n: number; fail?: boolean }> {
  handle(data: { n: number; fail?: boolean }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data });
    if (data.fail) throw new UnrecoverableError(`report ${data.n} failed`);
  }
}

@Job('clock.tick', { queue: 'ticks', attempts: 1 })
class Tick implements JobHandler<{ from: string }> {
  handle(data: { from: string }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data });
  }
}

@Cron('* * * * * *', { id: 'coded', data: { from: 'code' } })
@Job('clock.coded', { queue: 'ticks', attempts: 1 })
class Coded implements JobHandler<{ from: string }> {
  handle(data: { from: string }, ctx: JobContext) {
    runs.push({ jobId: ctx.jobId, data });
  }
}

const users: BrokerUser[] = [];
const opened: WarrenOps[] = [];

async function foreignUser(permissions = DEFAULT_EXCHANGE_ONLY): Promise<BrokerUser> {
  const user = await createBrokerUser('forger', permissions);
  users.push(user);
  return user;
}

function opsFor(namespace: string, signingKey?: string): WarrenOps {
  const ops = createOps({
    url: BROKER_URL,
    namespace,
    topology,
    jobs: [BuildReport, Tick],
    replyTimeoutMs: 1000,
    ...(signingKey ? { signingKey } : {}),
  });
  opened.push(ops);
  return ops;
}

/** Appends records to a stream as `user`, through the default exchange, confirmed. */
async function appendAs(
  user: BrokerUser,
  stream: string,
  records: readonly (unknown | { body: unknown; headers: Record<string, unknown> })[],
): Promise<void> {
  const connection = await amqp.connect(user.url);
  try {
    const channel = await connection.createConfirmChannel();
    for (const record of records) {
      const wrapped = record !== null && typeof record === 'object' && 'body' in (record as object);
      const body = wrapped ? (record as { body: unknown }).body : record;
      const headers = wrapped ? (record as { headers: Record<string, unknown> }).headers : {};
      const content = Buffer.isBuffer(body)
        ? body
        : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      channel.sendToQueue(stream, content, { headers, persistent: true });
    }
    await channel.waitForConfirms();
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Every record of a stream as it is (body and headers), read with the test's own rights. */
async function recordsOf(stream: string): Promise<{ body: Buffer; headers: Record<string, unknown> }[]> {
  const connection = await rawConnection();
  const found: { body: Buffer; headers: Record<string, unknown> }[] = [];
  try {
    await readToEnd(
      () => connection.createChannel(),
      stream,
      'first',
      { idleMs: 500, prefetch: 500 },
      (r) => {
        const { 'x-stream-offset': _offset, ...headers } = r.properties.headers ?? {};
        found.push({ body: r.content, headers });
      },
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
  return found;
}

/** A promise that must settle within `ms`: a read that hangs fails the test instead of stalling it. */
async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function worker(namespace: string, options: Record<string, unknown> = {}): Promise<Warren<object>> {
  const warren = await testWarren({
    namespace,
    topology,
    handlers: [new BuildReport(), new Tick()],
    ...options,
  });
  await warren.start();
  return warren;
}

/** A registry upsert of a schedule firing every second, as warren writes one (unsigned). */
function upsert(id: string, job: string, data: unknown) {
  return { v: 1, id, action: 'upsert', at: Date.now(), job, pattern: '* * * * * *', data };
}

/** Adds warren's own schedule `witness` and waits for 3 of its ticks: the moment a forged one would have fired. */
async function witnessTicks(w: Warren<object>): Promise<void> {
  await w.cron.add('clock.tick', '* * * * * *', { from: 'witness' }, { id: 'witness' });
  await waitFor(() => runs.filter((r) => r.jobId.startsWith('witness@')).length >= 3, {
    timeoutMs: 20_000,
    what: '3 ticks of warren’s own schedule',
  });
}

afterEach(async () => {
  // every stream is in the plans (the warrens' and the ops clients'): deleted with the rest
  for (const ops of opened.splice(0)) {
    await ops.close().catch(() => undefined);
    await deletePlanEntities(ops.plan);
  }
  await cleanup();
  for (const user of users.splice(0)) await deleteBrokerUser(user);
  runs.length = 0;
});

describe('job control records another broker user writes', () => {
  it('with a key, a forged cancel and a genuine cancel copied from another namespace are not applied, while warren’s own cancel is', async () => {
    const user = await foreignUser();
    const namespace = testNamespace('trust');
    const elsewhere = testNamespace('trust');
    const w = await worker(namespace, { signingKey: KEY });
    const publisher = await testWarren({ namespace, topology, jobs: [BuildReport], signingKey: KEY });
    const neighbour = await testWarren({
      namespace: elsewhere,
      topology,
      jobs: [BuildReport],
      signingKey: KEY,
    });
    for (const jobId of ['forged', 'copied', 'real'])
      await publisher.publish('report.build', { n: 1 }, { jobId, delayMs: 1500 });
    await publisher.delayed.cancel('real');
    // a genuine, signed cancel of `copied` in the other namespace, appended byte for byte to this one
    await neighbour.delayed.cancel('copied');
    const genuine = (await recordsOf(planOf(neighbour).naming.jobControl())).filter((r) =>
      r.body.toString().includes('"a":"cancel"'),
    );
    assert.equal(genuine.length, 1);
    assert.ok(typeof genuine[0]!.headers['warren-proof'] === 'string');
    const stream = planOf(w).naming.jobControl();
    await appendAs(user, stream, [{ j: 'forged', a: 'cancel', t: Date.now() }, ...genuine]);
    await nextEvent<{ jobId: string }>(w, 'discarded', (e) => e.jobId === 'real');
    await waitFor(() => ranIds().includes('forged') && ranIds().includes('copied'), {
      what: 'the jobs whose cancels were forged to run',
    });
    assert.deepEqual(ranIds().sort(), ['copied', 'forged']);
    const skips = w.health().records.byRole['job-control'];
    assert.equal(skips?.unsigned, 1);
    assert.equal(skips?.['bad-signature'], 1);
    assert.equal(w.health().connected, true);
  });

  it('without a key, promote publishes a forged stored copy only into its job’s planned queue, never where its record, CC or BCC say', async () => {
    const user = await foreignUser();
    const namespace = testNamespace('trust');
    const w = await worker(namespace);
    const ops = opsFor(namespace);
    const plan = planOf(w);
    // the positive twin: a controllable job promoted runs now (its copy also makes the stream)
    await w.publish('report.build', { n: 1 }, { jobId: 'legit', delayMs: 600_000, controllable: true });
    await ops.delayed.promote('legit');
    await waitFor(() => ranIds().includes('legit'), { what: 'the promoted job to run' });
    const connection = await rawConnection();
    const side = `${namespace}.elsewhere`;
    try {
      const channel = await connection.createChannel();
      await channel.assertQueue(side, { durable: true, arguments: { 'x-expires': 600_000 } });
      const now = Date.now();
      await appendAs(user, plan.naming.jobControl(), [
        {
          j: 'forged',
          a: 'stored',
          t: now,
          q: side,
          b: Buffer.from(JSON.stringify({ n: 666 })).toString('base64'),
          h: { 'warren-delayed': now + 600_000, 'warren-attempt': 1, CC: [side], BCC: [side] },
          p: {
            type: 'report.build',
            messageId: 'forged',
            contentType: 'application/json',
            expiration: '600000',
            appId: 'evil',
            userId: 'guest',
          },
        },
      ]);
      // a cold ops reads the stream to its end (the forged record included) before it promotes
      await opsFor(namespace).delayed.promote('forged');
      await waitFor(() => ranIds().includes('forged'), { what: 'the copy to run in its planned queue' });
      assert.equal((await channel.checkQueue(side)).messageCount, 0);
      await channel.deleteQueue(side);
    } finally {
      await connection.close().catch(() => undefined);
    }
  });
});

describe('the schedule registry another broker user writes', () => {
  it('with a key, a forged schedule never fires and a forged pause never pauses, while warren’s own schedule fires', async () => {
    const user = await foreignUser();
    const namespace = testNamespace('trust');
    const w = await worker(namespace, {
      signingKey: KEY,
      handlers: [new BuildReport(), new Tick(), new Coded()],
    });
    const at = Date.now();
    await appendAs(user, planOf(w).naming.scheduleRegistry(), [
      upsert('forged', 'clock.tick', { from: 'forged' }),
      { v: 1, id: 'coded', action: 'pause', at },
    ]);
    await witnessTicks(w);
    assert.equal(runs.filter((r) => r.jobId.startsWith('forged@')).length, 0);
    assert.ok(
      runs.some((r) => r.jobId.startsWith('coded@')),
      'the code schedule was paused',
    );
    assert.equal(w.health().records.byRole.schedules?.unsigned, 2);
  });

  it('without a key, a registry schedule whose data the job’s schema refuses is reported when read and never fires', async () => {
    const { z } = await import('zod');
    @Job('report.strict', { queue: 'reports', attempts: 1, schema: z.object({ n: z.number().max(10) }) })
    class Strict implements JobHandler<{ n: number }> {
      handle(data: { n: number }, ctx: JobContext) {
        runs.push({ jobId: ctx.jobId, data });
      }
    }
    const user = await foreignUser();
    const namespace = testNamespace('trust');
    const w = await worker(namespace, {
      handlers: [new BuildReport(), new Tick(), new Strict()],
      scheduler: { enabled: true },
    });
    await appendAs(user, planOf(w).naming.scheduleRegistry(), [upsert('big', 'report.strict', { n: 1e9 })]);
    await witnessTicks(w);
    assert.equal(runs.filter((r) => r.jobId.startsWith('big@')).length, 0);
    assert.equal(
      w.cron.list().some((s) => s.id === 'big'),
      false,
    );
  });
});

describe('the dead-letter log and the history another broker user writes', () => {
  async function deadLetter(w: Warren<object>, ops: WarrenOps, jobId: string) {
    await w.publish('report.build', { n: 1, fail: true }, { jobId });
    return waitFor(async () => (await ops.dead.search({ jobId })).find((l) => l.state === 'dead'), {
      what: `the dead letter of ${jobId} in the log`,
      intervalMs: 100,
    });
  }

  it('without a key, a marker {offsets: 7} no longer hangs search, replay or purge, and a real purge applies', async () => {
    const user = await foreignUser();
    const namespace = testNamespace('trust');
    const w = await worker(namespace, { deadLetterLog: {} });
    const letter = await deadLetter(w, opsFor(namespace), 'doomed');
    await appendAs(user, planOf(w).naming.deadLetterLog(), [
      { body: { offsets: 7 }, headers: { 'warren-log-kind': 'marker' } },
      {
        body: { action: 'purged', offsets: { length: 1e9 }, at: 1 },
        headers: { 'warren-log-kind': 'marker' },
      },
    ]);
    const cold = opsFor(namespace);
    const found = await within(10_000, cold.dead.search({ jobId: 'doomed' }), 'a search');
    assert.deepEqual(
      found.map((l) => [l.offset, l.state]),
      [[letter.offset, 'dead']],
    );
    assert.equal((await within(10_000, cold.dead.purge({ jobId: 'doomed' }), 'a purge')).purged, 1);
    assert.equal((await cold.dead.search({ jobId: 'doomed' }))[0]?.state, 'purged');
    assert.equal(cold.skippedRecords().byRole['dead-letter-log']?.malformed, 2);
  });

  it('with a key, a forged purge marker and a forged letter are not applied, while warren’s own purge is', async () => {
    const user = await foreignUser();
    const namespace = testNamespace('trust');
    const w = await worker(namespace, { deadLetterLog: {}, signingKey: KEY });
    const ops = opsFor(namespace, KEY);
    const kept = await deadLetter(w, ops, 'kept');
    const purged = await deadLetter(w, ops, 'purged');
    await appendAs(user, planOf(w).naming.deadLetterLog(), [
      {
        body: { action: 'purged', offsets: [kept.offset], at: Date.now() },
        headers: { 'warren-log-kind': 'marker' },
      },
      {
        body: { n: 1 },
        headers: {
          'warren-log-kind': 'letter',
          'warren-queue': 'reports',
          'warren-dead-reason': 'unrecoverable',
        },
      },
    ]);
    await ops.dead.purge({ jobId: 'purged' });
    const cold = opsFor(namespace, KEY);
    const letters = await within(10_000, cold.dead.search({}), 'a search');
    assert.deepEqual(
      letters.map((l) => [l.jobId, l.state]),
      [
        ['kept', 'dead'],
        ['purged', 'purged'],
      ],
    );
    assert.equal(purged.state, 'dead');
    assert.equal(cold.skippedRecords().byRole['dead-letter-log']?.unsigned, 2);
  });

  it('a forged history record no longer hangs ops.job, and with a key a forged event is not shown', async () => {
    const user = await foreignUser();
    for (const signingKey of [undefined, KEY]) {
      const namespace = testNamespace('trust');
      const w = await worker(namespace, { history: { flushMs: 20 }, ...(signingKey ? { signingKey } : {}) });
      const ops = opsFor(namespace, signingKey);
      await w.publish('report.build', { n: 1 }, { jobId: 'looked-up' });
      await waitFor(async () => (await ops.job('looked-up')).state === 'completed', {
        what: 'the job completed in the history',
        intervalMs: 100,
      });
      const forged = [
        { p: 'x', h: 'y', pid: 1, e: { j: 'looked-up' } },
        { p: 'x', h: 'y', pid: 1, e: [{ j: 'looked-up', k: 'nope', t: 'soon' }] },
        { p: 'x', h: 'y', pid: 1, e: [null, 7, { j: 'looked-up' }] },
      ];
      if (signingKey)
        forged.push({
          p: 'x',
          h: 'y',
          pid: 1,
          e: [
            { j: 'looked-up', n: 'report.build', q: 'reports', k: 'dead', t: Date.now() + 1000, r: 'forged' },
          ] as never,
        });
      await appendAs(user, planOf(w).naming.jobHistory(), forged);
      const status = await within(15_000, ops.job('looked-up'), 'ops.job');
      assert.equal(status.state, 'completed', `with key ${signingKey !== undefined}`);
    }
  });
});

describe('the control exchange another broker user writes', () => {
  it('without a key, a forged reply with queues [null] does not break pause, and a pause pauses', async () => {
    const namespace = testNamespace('trust');
    const w = await worker(namespace);
    const exchange = planOf(w).naming.controlExchange();
    // The forger listens on the control exchange (configure and read on a queue of its own) and answers.
    const connection = await rawConnection();
    try {
      const channel = await connection.createChannel();
      const { queue } = await channel.assertQueue('', { exclusive: true });
      await channel.bindQueue(queue, exchange, '');
      await channel.consume(queue, (message) => {
        if (!message) return;
        const reply = {
          v: 1,
          command: 'sync-pause',
          queue: 'reports',
          process: { id: 'forged', host: 'h', pid: 1, version: '0', startedAt: '', connected: true },
        };
        for (const process of [
          { ...reply.process, queues: [null], breakers: [], isLeader: false, schedules: [] },
        ])
          channel.sendToQueue(
            message.properties.replyTo,
            Buffer.from(JSON.stringify({ ...reply, process })),
            {
              correlationId: message.properties.correlationId,
            },
          );
      });
      const ops = opsFor(namespace);
      const result = await within(10_000, ops.pause('reports'), 'ops.pause');
      assert.deepEqual(
        result.confirmed.map((p) => p.id),
        [w.processId],
      );
      await waitFor(() => w.health().consumers.find((c) => c.queue === 'reports')?.paused, {
        what: 'the queue paused',
      });
      assert.ok(ops.skippedRecords().byRole['control-reply']?.malformed);
    } finally {
      await connection.close().catch(() => undefined);
    }
  });

  it('a flood of sync requests from a user who may only publish there does not hide a process', async () => {
    const namespace = testNamespace('trust');
    const w = await worker(namespace);
    const user = await foreignUser(writeOnly(planOf(w).naming.controlExchange()));
    const connection = await amqp.connect(user.url);
    try {
      const channel = await connection.createConfirmChannel();
      for (let i = 0; i < 3000; i++)
        channel.publish(
          planOf(w).naming.controlExchange(),
          '',
          Buffer.from(JSON.stringify({ v: 1, command: 'sync-pause', queue: 'reports' })),
          { replyTo: 'amq.rabbitmq.reply-to.forged', correlationId: randomUUID() },
        );
      await channel.waitForConfirms();
    } finally {
      await connection.close().catch(() => undefined);
    }
    const { processes } = await opsFor(namespace).processes();
    assert.deepEqual(
      processes.map((p) => p.id),
      [w.processId],
    );
    assert.equal(w.health().connected, true);
  });

  it('with a key, an unsigned status request gets no answer, while ops’ signed one does', async () => {
    const namespace = testNamespace('trust');
    const w = await worker(namespace, { signingKey: KEY });
    const connection = await rawConnection();
    const answers: unknown[] = [];
    try {
      const channel = await connection.createChannel();
      await channel.consume('amq.rabbitmq.reply-to', (m) => m && answers.push(m.content.toString()), {
        noAck: true,
      });
      channel.publish(
        planOf(w).naming.controlExchange(),
        '',
        Buffer.from(JSON.stringify({ v: 1, command: 'status', t: Date.now() })),
        { replyTo: 'amq.rabbitmq.reply-to', correlationId: randomUUID() },
      );
      const { processes } = await opsFor(namespace, KEY).processes();
      assert.deepEqual(
        processes.map((p) => p.id),
        [w.processId],
      );
      await waitFor(() => w.health().records.byRole['control-request']?.unsigned === 1, {
        what: 'the unsigned request counted',
      });
      assert.deepEqual(answers, []);
    } finally {
      await connection.close().catch(() => undefined);
    }
  });
});

describe('a fuzz of forged, replayed and malformed records', () => {
  /** Deterministic pseudo-random numbers: a failing run can be replayed. */
  function random(seed: number): () => number {
    let s = seed;
    return () => {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      return s / 2 ** 31;
    };
  }

  /** `count` records for one stream: garbage, well-formed but unsigned, mis-signed, replayed, oversized. */
  function forgeries(
    next: () => number,
    count: number,
    wellFormed: () => unknown,
    genuine: readonly { body: Buffer; headers: Record<string, unknown> }[],
    kind?: string,
  ) {
    const base = kind ? { 'warren-log-kind': kind } : {};
    const out: { body: unknown; headers: Record<string, unknown> }[] = [];
    for (let i = 0; i < count; i++) {
      const pick = Math.floor(next() * 7);
      const real = genuine[Math.floor(next() * genuine.length)]!;
      if (pick === 0) out.push({ body: Buffer.from(randomUUID().repeat(1 + (i % 5))), headers: base });
      else if (pick === 1) out.push({ body: wellFormed(), headers: base });
      else if (pick === 2)
        out.push({ body: wellFormed(), headers: { ...base, 'warren-proof': real.headers['warren-proof'] } });
      else if (pick === 3) out.push(real);
      else if (pick === 4)
        out.push({ body: wellFormed(), headers: { ...base, 'warren-proof': `1.${randomUUID()}` } });
      else if (pick === 5) out.push({ body: Buffer.alloc(1024 ** 2 + 1, 0x7b), headers: base });
      else out.push({ body: [null, 7, { offsets: 7 }, 'x', { e: 1 }][i % 5], headers: base });
    }
    return out;
  }

  it('with a key, 1,000 records across every stream and the control exchange apply none, hang nothing, and warren’s own records still apply', async () => {
    const user = await foreignUser();
    const namespace = testNamespace('fuzz');
    const w = await worker(namespace, {
      signingKey: KEY,
      history: { flushMs: 20 },
      deadLetterLog: {},
      scheduler: { enabled: true },
    });
    const ops = opsFor(namespace, KEY);
    const { naming } = planOf(w);
    // genuine records of every stream, to replay and to borrow proofs from
    await w.publish('report.build', { n: 1 }, { jobId: 'victim', delayMs: 8000 });
    await w.delayed.cancel('gone-long-ago');
    await w.cron.add('clock.tick', '* * * * * *', { from: 'witness' }, { id: 'witness' });
    await w.publish('report.build', { n: 3 }, { jobId: 'hist' });
    await w.publish('report.build', { n: 4, fail: true }, { jobId: 'dl' });
    const letter = await waitFor(async () => (await ops.dead.search({ jobId: 'dl' }))[0], {
      what: 'the dead letter in the log',
      intervalMs: 100,
    });
    await waitFor(async () => (await ops.job('hist')).state === 'completed', {
      what: 'the history of hist',
      intervalMs: 100,
    });
    const next = random(27);
    const at = Date.now();
    const control = forgeries(
      next,
      250,
      () => ({ j: 'victim', a: 'cancel', t: at }),
      await recordsOf(naming.jobControl()),
    );
    const schedules = forgeries(
      next,
      250,
      () => ({
        v: 1,
        id: `fuzz-${randomUUID()}`,
        action: 'upsert',
        at,
        job: 'clock.tick',
        pattern: '* * * * * *',
      }),
      await recordsOf(naming.scheduleRegistry()),
    );
    const log = forgeries(
      next,
      200,
      () => ({ action: 'purged', offsets: [letter.offset], at }),
      await recordsOf(naming.deadLetterLog()),
      'marker',
    );
    const history = forgeries(
      next,
      200,
      () => ({
        p: 'x',
        h: 'y',
        pid: 1,
        e: [{ j: 'hist', n: 'report.build', q: 'reports', k: 'dead', t: at + 5000 }],
      }),
      await recordsOf(naming.jobHistory()),
    );
    await appendAs(user, naming.jobControl(), control);
    await appendAs(user, naming.scheduleRegistry(), schedules);
    await appendAs(user, naming.deadLetterLog(), log);
    await appendAs(user, naming.jobHistory(), history);
    // checkpoints claiming that nothing before offset 10^9 matters: were one taken, a start would miss
    // every schedule and cancel (the broker refuses them a user_id of warren's own user)
    const checkpoints = (of: 'job-control' | 'schedules', stream: string, state: unknown) =>
      forgeries(next, 100, () => ({ v: 1, s: stream, u: 1e9, t: at, g: [], d: state }), [
        { body: Buffer.from('{}'), headers: {} },
      ]).map((record) => ({ ...record, of }));
    const forgedCheckpoints = [
      ...checkpoints('job-control', naming.jobControl(), { d: [], c: [] }),
      ...checkpoints('schedules', naming.scheduleRegistry(), []),
    ];
    for (const of of ['job-control', 'schedules'] as const)
      await appendAs(
        user,
        naming.checkpoints(of),
        forgedCheckpoints.filter((r) => r.of === of),
      );
    // the history's index: shards and deltas claiming every offset holds no job (taken, they would hide
    // 'hist'), and checkpoints naming them, replayed and signed with borrowed proofs among them (once the
    // worker's background indexing wrote genuine ones to borrow from)
    // (the index streams are declared by the first indexing round: until then a read finds no queue, 404)
    const notYet = (error: { code?: unknown }) => (error.code === 404 ? [] : Promise.reject(error));
    await waitFor(async () => (await recordsOf(naming.jobHistoryCheckpoints()).catch(notYet)).length > 0, {
      what: 'the worker to index its history',
      intervalMs: 300,
    });
    const hide = (shard: boolean) =>
      encodeBlock({
        from: 0,
        to: 1e6,
        entries: [],
        marks: [],
        ...(shard ? { shard: { count: 1, index: 0 } } : {}),
      });
    const indexRecords = forgeries(
      next,
      50,
      () => hide(next() < 0.5),
      await recordsOf(naming.jobHistoryIndex()),
    );
    const indexCheckpoints = forgeries(
      next,
      50,
      () => ({
        v: 1,
        s: naming.jobHistory(),
        u: 1,
        t: at,
        g: null,
        d: { base: { n: 1, runs: [[0, 1]], from: 0, to: 0 }, deltas: [[1, 1, 1e6, 0]] },
      }),
      await recordsOf(naming.jobHistoryCheckpoints()),
    );
    await appendAs(user, naming.jobHistoryIndex(), indexRecords);
    await appendAs(user, naming.jobHistoryCheckpoints(), indexCheckpoints);
    const indexForgeries = indexRecords.length + indexCheckpoints.length;
    // and 200 requests on the control exchange, from a user who may publish there
    const requester = await foreignUser(writeOnly(naming.controlExchange()));
    const connection = await amqp.connect(requester.url);
    try {
      const channel = await connection.createConfirmChannel();
      for (const { body, headers } of forgeries(
        next,
        200,
        () => ({ v: 1, command: 'sync-pause', queue: 'reports', t: Date.now() }),
        [
          {
            body: Buffer.from('{}'),
            headers: { 'warren-proof': `1.${'0'.repeat(8)}.${'a'.repeat(16)}.1.${'A'.repeat(43)}` },
          },
        ],
      ))
        channel.publish(
          naming.controlExchange(),
          '',
          Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)),
          {
            headers,
            replyTo: 'amq.rabbitmq.reply-to.forged',
            correlationId: randomUUID(),
          },
        );
      await channel.waitForConfirms();
    } finally {
      await connection.close().catch(() => undefined);
    }
    const total =
      control.length +
      schedules.length +
      log.length +
      history.length +
      forgedCheckpoints.length +
      indexForgeries +
      200;
    assert.ok(total >= 1000);
    // warren's own records still apply: a cancel cancels, the witness keeps firing. The twin is published
    // now, not with the genuine records above: the forging takes seconds under load, and a job due before
    // its cancel rightly runs.
    await w.publish('report.build', { n: 2 }, { jobId: 'cancelled-twin', delayMs: 2000 });
    const twinDueAt = Date.now() + 2000;
    await w.delayed.cancel('cancelled-twin');
    const ticks = runs.filter((r) => r.jobId.startsWith('witness@')).length;
    await waitFor(() => ranIds().includes('victim'), {
      timeoutMs: 20_000,
      what: 'the job forged cancels named',
    });
    await waitFor(() => runs.filter((r) => r.jobId.startsWith('witness@')).length >= ticks + 2, {
      timeoutMs: 20_000,
      what: 'two more ticks of the witness',
    });
    await waitFor(() => Date.now() > twinDueAt + 1500, { what: 'the cancelled twin to be past due' });
    assert.equal(ranIds().includes('cancelled-twin'), false);
    assert.equal(runs.filter((r) => r.jobId.startsWith('fuzz-')).length, 0);
    // nothing hangs, nothing forged is shown
    const cold = opsFor(namespace, KEY);
    const letters = await within(20_000, cold.dead.search({}), 'a search of the log');
    assert.deepEqual(
      letters.map((l) => [l.jobId, l.state]),
      [['dl', 'dead']],
    );
    assert.equal((await within(20_000, cold.job('hist'), 'ops.job')).state, 'completed');
    const coldSchedules = await within(20_000, cold.schedules(), 'ops.schedules');
    assert.ok(
      coldSchedules.some((row) => row.id === 'witness'),
      'no forged checkpoint hid the registry from a process that starts after them',
    );
    const { processes } = await within(20_000, cold.processes(), 'ops.processes');
    assert.deepEqual(
      processes.map((p) => p.id),
      [w.processId],
    );
    assert.equal(w.health().connected, true);
    assert.equal(w.health().consumers.find((c) => c.queue === 'reports')?.paused, false);
    const skipped = w.health().records.skipped + cold.skippedRecords().skipped;
    // every forgery the worker and the cold ops read was skipped (the log and history of the cold ops,
    // the job control, the registry and the control requests of the worker)
    // (checkpoints and index records are not counted: a reader takes the newest checkpoint it trusts and
    // passes the rest by, and reads only the index records a trusted checkpoint names)
    assert.ok(
      skipped >= total - history.length - forgedCheckpoints.length - indexForgeries,
      `skipped ${skipped} of ${total}`,
    );
  });
});

describe('awaited results another broker user answers', () => {
  @Job('report.sum', { queue: 'reports', attempts: 1 })
  class Sum implements JobHandler<{ a: number; b: number }> {
    handle(data: { a: number; b: number }) {
      return data.a + data.b;
    }
  }

  it('with a key, an answer from whoever read the job message is not taken, the worker’s is', async () => {
    const namespace = testNamespace('trust');
    const publisher = await testWarren({ namespace, topology, jobs: [Sum], signingKey: KEY });
    const handle = await publisher.publishWithResult(Sum, { a: 2, b: 3 }, { jobId: 'sum-1' });
    // someone who may read the job queue takes the message, answers it, and puts it back
    const connection = await rawConnection();
    try {
      const channel = await connection.createChannel();
      const message = await waitFor(
        async () => (await channel.get(planOf(publisher).naming.queue('reports'))) || undefined,
        {
          what: 'the job message in its queue',
        },
      );
      const forged = { v: 1, jobId: 'sum-1', status: 'completed', result: 666 };
      channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify(forged)), {
        correlationId: 'sum-1',
        contentType: 'application/json',
      });
      channel.nack(message, false, true);
      await channel.close();
    } finally {
      await connection.close().catch(() => undefined);
    }
    await waitFor(() => publisher.health().records.byRole['job-result']?.unsigned === 1, {
      what: 'the forged answer refused',
    });
    await worker(namespace, { signingKey: KEY, handlers: [new Sum()] });
    assert.equal(await handle.result({ timeoutMs: 10_000 }), 5);
  });
});

describe('rolling a key out and rotating it', () => {
  const NEW_KEY = 'the-next-signing-key-of-trusted-records-tests';

  /** A worker of one key setting and a publisher of another in one namespace: the publisher's cancel of
   * `dropped` must be applied by the worker, which runs `kept`. */
  async function cancelAcross(workerKey: unknown, publisherKey: unknown) {
    const namespace = testNamespace('roll');
    const w = await worker(namespace, workerKey === undefined ? {} : { signingKey: workerKey });
    const p = await testWarren({
      namespace,
      topology,
      jobs: [BuildReport],
      ...(publisherKey === undefined ? {} : { signingKey: publisherKey as string }),
    });
    await p.publish('report.build', { n: 1 }, { jobId: `${namespace}-dropped`, delayMs: 1500 });
    await p.publish('report.build', { n: 2 }, { jobId: `${namespace}-kept`, delayMs: 1500 });
    await p.delayed.cancel(`${namespace}-dropped`);
    await nextEvent<{ jobId: string }>(w, 'discarded', (e) => e.jobId === `${namespace}-dropped`, 15_000);
    await waitFor(() => ranIds().includes(`${namespace}-kept`), { what: 'the job not cancelled to run' });
    assert.equal(ranIds().includes(`${namespace}-dropped`), false);
    return w;
  }

  it('loses no cancel while a key is rolled out: acceptUnsigned applies the records of processes without the key, and they apply the signed ones', async () => {
    const rolling = { keys: KEY, acceptUnsigned: true };
    const w = await cancelAcross(rolling, undefined);
    assert.equal(w.health().records.skipped, 0);
    await cancelAcross(undefined, rolling);
  });

  it('loses no cancel while a key rotates: [new, old] and [old, new] apply each other’s records', async () => {
    const w = await cancelAcross([NEW_KEY, KEY], [KEY, NEW_KEY]);
    assert.equal(w.health().records.skipped, 0);
    await cancelAcross([KEY, NEW_KEY], [NEW_KEY, KEY]);
    await cancelAcross(NEW_KEY, [NEW_KEY, KEY]);
  });
});
