/**
 * The hostile messages of the fuzz test (bad-input.test.ts): what a foreign client or another broker
 * user can put straight into warren's queues. Each message is labelled before it is sent with what
 * must become of it: `good` (runs exactly once) or the dead-letter reason it must be parked with.
 */
import type { Options } from 'amqplib';

export type QueueKey = 'intake' | 'legacy';
export type Expected =
  | 'good'
  | 'undecodable'
  | 'unknown-job'
  | 'invalid-payload'
  | 'wrong-queue'
  | 'invalid-headers'
  | 'too-large';

export interface FuzzMessage {
  readonly id: string;
  readonly queue: QueueKey;
  readonly kind: string;
  readonly expected: Expected;
  readonly content: Buffer;
  readonly options: Options.Publish;
  /** Sent by the second broker user, with its `user_id`. */
  readonly foreign: boolean;
}

/** amqplib refuses to encode a header table over 64 KiB; these stay just under it. */
export const NEAR_LIMIT_PAD = 65_400;
/** The fuzz worker's `worker.maxBodyBytes`: the 1 MB good job fits, the 2 MB bodies do not. */
export const FUZZ_MAX_BODY_BYTES = 1_500_000;

/** mulberry32: small, seedable, good enough to spread cases. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function pick<T>(r: () => number, values: readonly T[]): T {
  return values[Math.floor(r() * values.length)]!;
}

/** A nested table with a '!' key: amqplib decodes it into what looks like its own typed-value form. */
export const bangTable = () => ({ 'bang-table': { '!': 'object', value: { '!': 'bogus', value: 1 } } });

/**
 * Header values of every field type an AMQP table can carry (t b B s u I i l f d D S T F V x A), and
 * broker-style `x-` headers a foreign client may forge. Not here: a double of ±Infinity or NaN.
 * RabbitMQ 3.10 cannot parse it and closes the publisher's connection (541 INTERNAL_ERROR), so such a
 * message never reaches a worker. None of these touch warren's control headers: good jobs carry them.
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
    'typed-f64': { '!': 'double', value: -0.125 },
    'typed-u32': { '!': 'unsignedint', value: 4_000_000_000 },
    'typed-i32': { '!': 'int', value: -2_000_000_000 },
  }),
  () => ({
    'typed-i8': { '!': 'int8', value: -5 },
    'typed-u8': { '!': 'unsignedbyte', value: 250 },
    'typed-i16': { '!': 'short', value: -30_000 },
    'typed-u16': { '!': 'unsignedshort', value: 65_000 },
    'typed-i64': { '!': 'int64', value: -(2 ** 50) },
  }),
  () => ({ 'long-string': 'L'.repeat(10_000) }),
  () => ({ 'ключ-🔑': 'значение ✓', 'emoji-🙂': '🙂'.repeat(50) }),
  bangTable,
  (r) => ({ 'warren-enqueued-at': pick(r, ['yesterday', -1, 2 ** 60, Date.now() - 1000]) }),
  (r) => ({ 'warren-attempt': 1, 'warren-deliver-at': pick(r, [Date.now() - 60_000, 0]) }),
  () => ({ 'x-death': 'garbage', 'x-first-death-reason': 42, traceparent: 'not-a-trace' }),
  (r) => ({
    'x-delivery-count': pick(r, [99, 'x', -1]),
    'x-first-death-queue': 'elsewhere',
    'x-match': 'any',
    'x-dead-letter-exchange': 'nowhere',
    'x-death': [{ count: 'many', reason: 'rejected', queue: 42 }],
  }),
];

/** Forged warren control headers no honest publisher writes: each must end as `invalid-headers`. */
const FORGED_HEADERS: readonly ((r: () => number) => Record<string, unknown>)[] = [
  (r) => ({ 'warren-attempt': pick(r, ['three', -4, 1e300, true, null, { x: 1 }, 0, 2 ** 60, 2.5]) }),
  (r) => ({ 'warren-max-attempts': pick(r, [0, 'x', -1, [2]]) }),
  (r) => ({ 'warren-deliver-at': pick(r, [Date.now() + 5 * 365 * 86_400_000, 'tomorrow', true, -5]) }),
  (r) => ({ 'warren-redeliveries': pick(r, ['many', 2 ** 60, -3]) }),
];

export function oddHeaders(r: () => number): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  const count = Math.floor(r() * 4);
  for (let i = 0; i < count; i++) Object.assign(headers, pick(r, ODD_HEADERS)(r));
  return headers;
}

/**
 * Random AMQP basic properties a foreign client may set, none of which decides what warren does with
 * the message: app id, reply-to, correlation id, content encoding, priority (the queues have none),
 * delivery mode, a timestamp anywhere in range, an expiration far beyond the test.
 */
function oddProperties(r: () => number): Options.Publish {
  const properties: Options.Publish = {};
  if (r() < 0.3) properties.appId = pick(r, ['', 'billing', 'ä'.repeat(120)]);
  if (r() < 0.3) properties.replyTo = pick(r, ['reply.elsewhere', 'nowhere', '']);
  if (r() < 0.3) properties.correlationId = pick(r, ['c-1', '', 'x'.repeat(255)]);
  if (r() < 0.2) properties.contentEncoding = pick(r, ['gzip', 'utf-8', 'bogus']);
  if (r() < 0.2) properties.priority = Math.floor(r() * 256);
  if (r() < 0.3) properties.timestamp = pick(r, [0, 1, 2 ** 40, Math.floor(Date.now() / 1000)]);
  if (r() < 0.1) properties.expiration = '600000';
  return properties;
}

export function goodBody(id: string, r: () => number, failFirst = false): Buffer {
  const extra = r() < 0.3 ? { note: 'ünïcödé ✓', nested: { list: [1, 2, 3] } } : {};
  return Buffer.from(
    JSON.stringify({
      orderId: id,
      qty: 1 + Math.floor(r() * 5),
      ...(failFirst ? { failFirst } : {}),
      ...extra,
    }),
  );
}

function deepJson(id: string, depth: number): Buffer {
  return Buffer.from(`{"orderId":${'['.repeat(depth)}"${id}"${']'.repeat(depth)},"qty":1}`);
}

type Make = (id: string, job: string, r: () => number, otherJob: string) => [Buffer, Options.Publish];

/** The bad cases: each returns a message, given an id, its queue's job name and the random source. */
export const BAD_KINDS: readonly { kind: string; weight: number; expected: Expected; make: Make }[] = [
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
    weight: 6,
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
    weight: 4,
    expected: 'undecodable',
    make: (_id, job, r) => [
      Buffer.from([0xff, ...Array.from({ length: 64 }, () => Math.floor(r() * 256))]),
      { type: job, contentType: 'application/json' },
    ],
  },
  {
    kind: 'json-not-utf8',
    weight: 5,
    expected: 'undecodable',
    make: (id, job) => [
      Buffer.concat([
        Buffer.from(`{"orderId":"${id}`),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('","qty":1}'),
      ]),
      { type: job, contentType: 'application/json' },
    ],
  },
  {
    kind: 'empty-body',
    weight: 3,
    expected: 'undecodable',
    make: (_id, job) => [Buffer.alloc(0), { type: job }],
  },
  {
    kind: 'missing-type',
    weight: 4,
    expected: 'undecodable',
    make: (id, _job, r) => [goodBody(id, r), { contentType: 'application/json' }],
  },
  {
    kind: 'empty-type',
    weight: 2,
    expected: 'undecodable',
    make: (id, _job, r) => [goodBody(id, r), { type: '', contentType: 'application/json' }],
  },
  {
    kind: 'unknown-type',
    weight: 8,
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
    kind: 'wrong-queue',
    weight: 8,
    expected: 'wrong-queue',
    make: (id, _job, r, otherJob) => [goodBody(id, r), { type: otherJob, contentType: 'application/json' }],
  },
  {
    kind: 'forged-control-headers',
    weight: 12,
    expected: 'invalid-headers',
    make: (id, job, r) => [
      goodBody(id, r),
      { type: job, contentType: 'application/json', headers: pick(r, FORGED_HEADERS)(r) },
    ],
  },
  {
    kind: 'deep-payload',
    weight: 3,
    expected: 'invalid-payload',
    make: (id, job, r) => [
      deepJson(id, pick(r, [1_000, 50_000])),
      { type: job, contentType: 'application/json' },
    ],
  },
  {
    kind: 'wrong-shape',
    weight: 12,
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

export function manyHeaders(count: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < count; i++) headers[`h${String(i).padStart(4, '0')}`] = 'v'.repeat(20);
  return headers;
}

/**
 * `options` with random foreign properties and odd headers added: none of them may change what
 * becomes of a message, good or bad (the case's own properties and headers win).
 */
export function withOddExtras(options: Options.Publish, r: () => number): Options.Publish {
  return { ...oddProperties(r), ...options, headers: { ...oddHeaders(r), ...options.headers } };
}

/** Messages per queue: about two thirds of them bad. */
const MESSAGES_PER_QUEUE = 420;

/**
 * The fuzz for one seed: both queues' messages, ids `<prefix>-N`. Deterministic: the same seed with
 * another prefix gives the same messages (same kinds, sizes and order) under other ids.
 */
export function fuzzMessages(seed: number, prefix: string): FuzzMessage[] {
  const r = prng(seed);
  let n = 0;
  const next = () => `${prefix}-${n++}`;
  const messages = [
    ...generate('intake', 'intake.order', 'legacy.order', r, next),
    ...generate('legacy', 'legacy.order', 'intake.order', r, next),
  ];
  // Interleaved: the extremes (2 MB bodies, 64 KiB header tables) spread over the whole stream.
  for (let i = messages.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [messages[i], messages[j]] = [messages[j]!, messages[i]!];
  }
  return messages;
}

function generate(
  queue: QueueKey,
  job: string,
  otherJob: string,
  r: () => number,
  next: () => string,
): FuzzMessage[] {
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
      // A third of every kind comes from the second broker user, carrying its user_id.
      foreign: r() < 0.33,
      options: { ...options, ...(withMessageId ? { messageId: id } : {}), persistent: r() < 0.8 },
    });
  const totalWeight = 30 + BAD_KINDS.reduce((n, k) => n + k.weight, 0);
  const json = { type: job, contentType: 'application/json' };

  // Fixed cases: the extremes, on both queues.
  let id = next();
  add(
    'good, header table near 64 KiB',
    'good',
    goodBody(id, r),
    { ...json, headers: { pad: 'p'.repeat(NEAR_LIMIT_PAD) } },
    id,
  );
  id = next();
  add('good, 2100 headers', 'good', goodBody(id, r), { ...json, headers: manyHeaders(2_100) }, id);
  id = next();
  const blob = 'z'.repeat(1_000_000);
  add('good, 1 MB body', 'good', Buffer.from(JSON.stringify({ orderId: id, qty: 2, blob })), json, id);
  id = next();
  add(
    'good, fails once, 1 MB body',
    'good',
    Buffer.from(JSON.stringify({ orderId: id, qty: 2, blob, failFirst: true })),
    json,
    id,
  );
  id = next();
  add(
    'good, no message id',
    'good',
    goodBody(id, r),
    { ...json, contentType: 'application/json; charset=utf-8' },
    id,
    false,
  );
  for (const kind of ['unknown-type', 'not-json', 'wrong-shape', 'forged-control-headers'] as const) {
    const bad = BAD_KINDS.find((k) => k.kind === kind)!;
    id = next();
    const [content, options] = bad.make(id, job, r, otherJob);
    const headers = { ...options.headers, pad: 'p'.repeat(NEAR_LIMIT_PAD - 200) };
    add(`${kind}, header table near 64 KiB`, bad.expected, content, { ...options, headers }, id);
  }
  id = next();
  add(
    'unknown-type, 2100 headers',
    'unknown-job',
    goodBody(id, r),
    { ...json, type: `${job}.nope`, headers: manyHeaders(2_100) },
    id,
  );
  id = next();
  add(
    'unknown-type, table with a ! key',
    'unknown-job',
    goodBody(id, r),
    { ...json, type: `${job}.nope`, headers: bangTable() },
    id,
  );
  const huge: [string, (id: string) => string][] = [
    ['too-large, 2 MB of garbage', (id) => `${id} ${'x'.repeat(2_000_000)}`],
    [
      'too-large, 2 MB of good JSON',
      (id) => JSON.stringify({ orderId: id, qty: 1, blob: 'y'.repeat(2_000_000) }),
    ],
  ];
  for (const [kind, body] of huge) {
    id = next();
    add(kind, 'too-large', Buffer.from(body(id)), json, id);
  }
  id = next();
  add('not-json, no message id', 'undecodable', Buffer.from(`not json at all: ${id}`), json, id, false);

  while (messages.length < MESSAGES_PER_QUEUE) {
    id = next();
    let roll = r() * totalWeight;
    if (roll < 30) {
      const contentType = pick(r, ['application/json', 'application/json; charset=utf-8', undefined]);
      add('good', 'good', goodBody(id, r, r() < 0.15), withOddExtras({ type: job, contentType }, r), id);
      continue;
    }
    roll -= 30;
    const bad =
      BAD_KINDS.find((k) => {
        roll -= k.weight;
        return roll < 0;
      }) ?? BAD_KINDS[0]!;
    const [content, options] = bad.make(id, job, r, otherJob);
    add(bad.kind, bad.expected, content, withOddExtras(options, r), id);
  }
  return messages;
}
