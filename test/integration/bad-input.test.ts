import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Options } from 'amqplib';
import { z } from 'zod';
import { defineTopology, Job, type JobHandler } from '../../src';
import { FaultLedger } from '../resilience/fault-ledger';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/** A hang fails the test (and the after hook still cleans up) instead of stalling the suite. */
const TEST_TIMEOUT_MS = 180_000;

/**
 * Fuzz: hundreds of malformed messages from a plain AMQP client, mixed with good jobs, into a quorum
 * and a classic queue. Every good job must complete, every bad one must land in dead letters with
 * the reason that fits it, and the worker must neither crash nor stall. The generator is seeded:
 * a failure replays exactly with the same SEED.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_240_611);
const MESSAGES_PER_QUEUE = 300;
/** amqplib refuses to encode a header table over 64 KiB; these stay just under it. */
const NEAR_LIMIT_PAD = 65_400;

const Order = z.object({ orderId: z.string().min(1), qty: z.number().int().positive() });
type OrderData = z.infer<typeof Order>;

const topology = defineTopology({ queues: { intake: {}, legacy: { type: 'classic' } } });

@Job('intake.order', { queue: 'intake', schema: Order, attempts: 1 })
class IntakeOrder implements JobHandler<OrderData> {
  constructor(private readonly ledger: FaultLedger) {}
  async handle(data: OrderData) {
    this.ledger.ran(data.orderId);
  }
}

@Job('legacy.order', { queue: 'legacy', schema: Order, attempts: 1 })
class LegacyOrder implements JobHandler<OrderData> {
  constructor(private readonly ledger: FaultLedger) {}
  async handle(data: OrderData) {
    this.ledger.ran(data.orderId);
  }
}

type QueueKey = 'intake' | 'legacy';
type Expected = 'good' | 'undecodable' | 'unknown-job' | 'invalid-payload';

interface FuzzMessage {
  readonly id: string;
  readonly queue: QueueKey;
  readonly kind: string;
  readonly expected: Expected;
  readonly content: Buffer;
  readonly options: Options.Publish;
}

/** mulberry32: small, seedable, good enough to spread cases. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A nested table with a '!' key: amqplib decodes it into what looks like its own typed-value form. */
const bangTable = () => ({ 'bang-table': { '!': 'object', value: { '!': 'bogus', value: 1 } } });

/**
 * Header values of every type an AMQP table can carry, and some that lie about warren's own headers.
 * Not here: a double of ±Infinity or NaN. RabbitMQ 3.10 cannot parse it and closes the publisher's
 * connection (541 INTERNAL_ERROR), so such a message never reaches a worker.
 */
const ODD_HEADERS: readonly ((r: () => number) => Record<string, unknown>)[] = [
  () => ({ 'n-int': 42, 'n-neg': -7, 'n-big': 2 ** 53, 'n-huge-neg': -(2 ** 60), 'n-float': 2.5e-3 }),
  () => ({ 'b-true': true, 'b-false': false, 'v-null': null, 's-empty': '' }),
  () => ({ 'a-mixed': [1, 'two', true, null, [3], { four: 4 }], 't-nested': { a: { b: { c: 'deep' } } } }),
  () => ({ 'x-bytes': Buffer.from([0, 255, 1, 127]) }),
  () => ({
    'typed-ts': { '!': 'timestamp', value: 1_700_000_000 },
    'typed-dec': { '!': 'decimal', value: { places: 2, digits: 12_345 } },
  }),
  () => ({
    'typed-f32': { '!': 'float', value: 1.5 },
    'typed-u32': { '!': 'unsignedint', value: 4_000_000_000 },
    'typed-i8': { '!': 'int8', value: -5 },
  }),
  () => ({ 'long-string': 'L'.repeat(10_000) }),
  () => ({ 'ключ-🔑': 'значение ✓', 'emoji-🙂': '🙂'.repeat(50) }),
  bangTable,
  (r) => ({ 'warren-attempt': pick(r, ['three', -4, 1e300, true, null, { x: 1 }, 0, 2 ** 60]) }),
  (r) => ({
    'warren-max-attempts': pick(r, [0, 'x', -1]),
    'warren-enqueued-at': pick(r, ['yesterday', -1, 2 ** 60]),
  }),
  (r) => ({
    'warren-deliver-at': pick(r, [Date.now() - 60_000, 'tomorrow', true, 0]),
    'warren-redeliveries': pick(r, ['many', 2 ** 60, -3]),
  }),
  () => ({ 'x-death': 'garbage', 'x-first-death-reason': 42, traceparent: 'not-a-trace' }),
];

function pick<T>(r: () => number, values: readonly T[]): T {
  return values[Math.floor(r() * values.length)]!;
}

function oddHeaders(r: () => number): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  const count = Math.floor(r() * 4);
  for (let i = 0; i < count; i++) Object.assign(headers, pick(r, ODD_HEADERS)(r));
  return headers;
}

function goodBody(id: string, r: () => number): Buffer {
  const extra = r() < 0.3 ? { note: 'ünïcödé ✓', nested: { list: [1, 2, 3] } } : {};
  return Buffer.from(JSON.stringify({ orderId: id, qty: 1 + Math.floor(r() * 5), ...extra }));
}

/** The cases: each returns a message, given an id, its queue's job name and the random source. */
const BAD_KINDS: readonly {
  kind: string;
  weight: number;
  expected: Expected;
  make: (id: string, job: string, r: () => number) => [Buffer, Options.Publish];
}[] = [
  {
    kind: 'not-json',
    weight: 8,
    expected: 'undecodable',
    make: (id, job) => [
      Buffer.from(`{"orderId": "${id}", qty:`),
      { type: job, contentType: 'application/json' },
    ],
  },
  {
    kind: 'wrong-content-type',
    weight: 8,
    expected: 'undecodable',
    make: (id, job, r) => [
      goodBody(id, r),
      {
        type: job,
        contentType: pick(r, ['text/plain', 'application/xml', 'application/octet-stream', 'text/json']),
      },
    ],
  },
  {
    kind: 'binary-body',
    weight: 5,
    expected: 'undecodable',
    make: (_id, job, r) => [
      Buffer.from([0xff, ...Array.from({ length: 64 }, () => Math.floor(r() * 256))]),
      { type: job, contentType: 'application/json' },
    ],
  },
  {
    kind: 'empty-body',
    weight: 4,
    expected: 'undecodable',
    make: (_id, job) => [Buffer.alloc(0), { type: job }],
  },
  {
    kind: 'missing-type',
    weight: 6,
    expected: 'undecodable',
    make: (id, _job, r) => [goodBody(id, r), { contentType: 'application/json' }],
  },
  {
    kind: 'empty-type',
    weight: 3,
    expected: 'undecodable',
    make: (id, _job, r) => [goodBody(id, r), { type: '', contentType: 'application/json' }],
  },
  {
    kind: 'unknown-type',
    weight: 10,
    expected: 'unknown-job',
    make: (id, _job, r) => [
      goodBody(id, r),
      {
        type: pick(r, ['intake.nope', 'x', 'order', 'a'.repeat(255), 'ORDER.INTAKE']),
        contentType: 'application/json',
      },
    ],
  },
  {
    kind: 'wrong-shape',
    weight: 15,
    expected: 'invalid-payload',
    make: (id, job, r) => [
      Buffer.from(
        JSON.stringify(
          pick(r, [
            { orderId: 5, qty: 1, ref: id },
            { qty: 1, ref: id },
            { orderId: id, qty: -1 },
            { orderId: id, qty: 1.5 },
            { orderId: id, qty: '3' },
            { orderId: '', qty: 1, ref: id },
            [id],
            null,
            42,
            id,
            { orderId: id },
          ]),
        ),
      ),
      { type: job, contentType: 'application/json' },
    ],
  },
];

function generate(queue: QueueKey, job: string, r: () => number, next: () => string): FuzzMessage[] {
  const messages: FuzzMessage[] = [];
  const add = (
    kind: string,
    expected: Expected,
    content: Buffer,
    options: Options.Publish,
    id: string,
    withMessageId = true,
  ) =>
    messages.push({
      id,
      queue,
      kind,
      expected,
      content,
      options: { ...options, ...(withMessageId ? { messageId: id } : {}), persistent: r() < 0.8 },
    });
  const totalWeight = 30 + BAD_KINDS.reduce((n, k) => n + k.weight, 0);

  // Fixed cases: the extremes, on both queues.
  let id = next();
  add(
    'good, header table near 64 KiB',
    'good',
    goodBody(id, r),
    { type: job, contentType: 'application/json', headers: { pad: 'p'.repeat(NEAR_LIMIT_PAD) } },
    id,
  );
  id = next();
  add(
    'good, 2100 headers',
    'good',
    goodBody(id, r),
    { type: job, contentType: 'application/json', headers: manyHeaders(2_100) },
    id,
  );
  id = next();
  add(
    'good, 1 MB body',
    'good',
    Buffer.from(JSON.stringify({ orderId: id, qty: 2, blob: 'z'.repeat(1_000_000) })),
    { type: job, contentType: 'application/json' },
    id,
  );
  id = next();
  add(
    'good, no message id',
    'good',
    goodBody(id, r),
    { type: job, contentType: 'application/json; charset=utf-8' },
    id,
    false,
  );
  for (const kind of ['unknown-type', 'not-json', 'wrong-shape'] as const) {
    const bad = BAD_KINDS.find((k) => k.kind === kind)!;
    id = next();
    const [content, options] = bad.make(id, job, r);
    add(
      `${kind}, header table near 64 KiB`,
      bad.expected,
      content,
      { ...options, headers: { pad: 'p'.repeat(NEAR_LIMIT_PAD) } },
      id,
    );
  }
  id = next();
  add(
    'unknown-type, 2100 headers',
    'unknown-job',
    goodBody(id, r),
    { type: `${job}.nope`, contentType: 'application/json', headers: manyHeaders(2_100) },
    id,
  );
  id = next();
  add(
    'unknown-type, table with a ! key',
    'unknown-job',
    goodBody(id, r),
    { type: `${job}.nope`, contentType: 'application/json', headers: bangTable() },
    id,
  );
  id = next();
  add(
    'not-json, 2 MB body',
    'undecodable',
    Buffer.from(`${id} ${'x'.repeat(2_000_000)}`),
    { type: job, contentType: 'application/json' },
    id,
  );
  id = next();
  add(
    'not-json, no message id',
    'undecodable',
    Buffer.from(`not json at all: ${id}`),
    { type: job, contentType: 'application/json' },
    id,
    false,
  );

  while (messages.length < MESSAGES_PER_QUEUE) {
    id = next();
    let roll = r() * totalWeight;
    if (roll < 30) {
      add(
        'good',
        'good',
        goodBody(id, r),
        {
          type: job,
          contentType: pick(r, ['application/json', 'application/json; charset=utf-8', undefined]),
          headers: oddHeaders(r),
        },
        id,
      );
      continue;
    }
    roll -= 30;
    const bad =
      BAD_KINDS.find((k) => {
        roll -= k.weight;
        return roll < 0;
      }) ?? BAD_KINDS[0]!;
    const [content, options] = bad.make(id, job, r);
    add(bad.kind, bad.expected, content, { ...options, headers: oddHeaders(r) }, id);
  }
  return messages;
}

function manyHeaders(count: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < count; i++) headers[`h${String(i).padStart(4, '0')}`] = 'v'.repeat(20);
  return headers;
}

/** Which fuzz message a dead letter is: by message id, else by the id written into its body. */
function fuzzIdOf(letter: { jobId: string | undefined; data: unknown }): string | undefined {
  if (letter.jobId?.startsWith('fz-')) return letter.jobId;
  const text = typeof letter.data === 'string' ? letter.data : JSON.stringify(letter.data);
  return /fz-\d+/.exec(text ?? '')?.[0];
}

describe('bad input from foreign publishers (fuzz)', () => {
  afterEach(cleanup);

  it('completes every good job, dead-letters every bad one with its reason, and keeps consuming', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const ledger = new FaultLedger('8. bad input (fuzz, quorum + classic queue)');
    const warren = await testWarren({
      topology,
      handlers: [new IntakeOrder(ledger), new LegacyOrder(ledger)],
    });
    await warren.start();
    const r = prng(SEED);
    let n = 0;
    const next = () => `fz-${n++}`;
    const messages = [
      ...generate('intake', 'intake.order', r, next),
      ...generate('legacy', 'legacy.order', r, next),
    ];
    const queueName = (queue: QueueKey) =>
      warren.plan.queues.find((q) => q.key === queue && q.role === 'job')!.name;

    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    let channelError: Error | undefined;
    channel.on('error', (error: Error) => (channelError = error));
    connection.on('close', (error?: Error) => (channelError ??= error));
    const started = Date.now();
    const sent = messages.map((m) =>
      ledger.track(
        m.id,
        new Promise<void>((resolve, reject) =>
          channel.sendToQueue(queueName(m.queue), m.content, m.options, (error: unknown) =>
            error ? reject(error) : resolve(),
          ),
        ),
      ),
    );
    const taken = await Promise.all(sent);
    assert.deepEqual(
      messages.filter((_, i) => !taken[i]).map((m) => `${m.id} ${m.kind}`),
      [],
      `the broker took every fuzz message (${channelError?.message ?? 'no channel error'})`,
    );
    await connection.close();

    const good = messages.filter((m) => m.expected === 'good');
    const bad = messages.filter((m) => m.expected !== 'good');
    const badIn = (queue: QueueKey) => bad.filter((m) => m.queue === queue).length;
    await waitFor(() => good.every((m) => ledger.runsOf(m.id) > 0), {
      timeoutMs: 60_000,
      what: `all ${good.length} good jobs to run`,
    }).catch((error: Error) => {
      const notRun = good.filter((m) => ledger.runsOf(m.id) === 0).map((m) => `${m.id} ${m.queue} ${m.kind}`);
      throw new Error(`${error.message}; ${notRun.length} did not run: ${notRun.slice(0, 20).join(', ')}`);
    });
    const counts = await waitFor(
      async () => {
        const c = {
          intake: await warren.deadLetters.count('intake'),
          legacy: await warren.deadLetters.count('legacy'),
        };
        return c.intake >= badIn('intake') && c.legacy >= badIn('legacy') ? c : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `all ${bad.length} bad messages in dead letters` },
    );
    const settledMs = Date.now() - started;

    // Every bad message is in its queue's dead letters, once, with the reason that fits it.
    const reasons = new Map<string, string[]>();
    for (const queue of ['intake', 'legacy'] as const) {
      for (const letter of await warren.deadLetters.list(queue, { limit: counts[queue] + 10 })) {
        const id = fuzzIdOf(letter) ?? `unidentified (${letter.reason})`;
        reasons.set(id, [...(reasons.get(id) ?? []), letter.reason]);
      }
    }
    const wrong = bad
      .filter((m) => reasons.get(m.id)?.join() !== m.expected)
      .map(
        (m) =>
          `${m.id} ${m.queue} ${m.kind}: expected ${m.expected}, got ${reasons.get(m.id)?.join() ?? 'nothing'}`,
      );
    assert.deepEqual(wrong, []);
    assert.deepEqual(
      good.filter((m) => reasons.has(m.id)).map((m) => m.id),
      [],
      'no good job is in dead letters',
    );
    assert.deepEqual(
      counts,
      { intake: badIn('intake'), legacy: badIn('legacy') },
      'no stray or duplicate dead letters',
    );
    for (const m of bad) ledger.ran(m.id);

    // Still consuming: jobs published after the fuzz run at once.
    assert.ok(warren.health().healthy);
    const after = Array.from({ length: 20 }, (_, i) => `after-${i}`);
    await Promise.all(
      after.map((id, i) =>
        ledger.track(
          id,
          warren.publish(i % 2 ? LegacyOrder : IntakeOrder, { orderId: id, qty: 1 }, { jobId: id }),
        ),
      ),
    );
    await waitFor(() => after.every((id) => ledger.runsOf(id) > 0), {
      timeoutMs: 10_000,
      what: 'the jobs published after the fuzz',
    });

    const row = ledger.report(
      settledMs,
      'no fault to recover from: fuzz sent until every message ran or was dead-lettered',
      {
        good: good.length,
        bad: bad.length,
        deadLetters: counts,
        seed: SEED,
      },
    );
    assert.equal(row.lost, 0);
    assert.equal(row.duplicates, 0);
    assert.deepEqual(ledger.strangers(), []);
  });
});
