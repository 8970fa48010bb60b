/**
 * One query from a fresh process, for the `lookup` suite: loads warren's ops from the given build (this
 * branch's dist, or a baseline build to compare with), runs one query, and prints its time and the
 * process's peak RSS as JSON. Not a suite of its own.
 *
 * Mode `floor`: the floor of any lookup on this machine at this moment: after connecting, one cold read
 * of one record (a channel opened, its prefetch set, a consumer at the stream's last chunk, its first
 * record), with bare amqplib on a connection like warren's (Nagle off). A lookup through the index makes
 * three such reads one after another (checkpoint, shard, batch), the last two on channels opened early.
 *
 * Mode `trace`: a `job` lookup with its timeline (traceReads).
 *
 * Mode `bound`: the lower bound of a lookup design (bare amqplib, no parsing past what picks the next
 * offset), its arg `<design>:<job id>` (see {@link bound}).
 *
 * Mode `serve`: a lookup server (`history.serveLookups`, its arg the `lookupCacheBytes` or empty for the
 * default) on the namespace's history: prints one line when it
 * has read the history once (the time that took, its CPU and RSS), another with its counts when its stdin
 * closes, then removes its namespace and exits.
 *
 *   node dist/bench/suites/lookup-child.js <dist root> <job|trace|search|replay|floor|bound> <url> <namespace> <arg>
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import * as amqp from 'amqplib';
import { defineTopology } from '../../src';
import { consumeNoWait } from '../../src/streams/nowait-consume';
import type { createOps as CreateOps } from '../../src/ops';

async function main(): Promise<void> {
  const [root, mode, url, namespace, arg] = process.argv.slice(2) as [string, string, string, string, string];
  if (mode === 'floor') return floor(url, arg);
  if (mode === 'bound') return bound(url, namespace, arg);
  if (mode === 'serve') return serve(root, url, namespace, arg);
  const trace = mode === 'trace' ? traceReads() : undefined;
  const { createOps } = require(join(root, 'src', 'ops')) as { createOps: typeof CreateOps };
  const topology = defineTopology({ queues: { bench: {} } });
  // the warren command's choice (a baseline build without the option ignores it)
  const ops = createOps({
    url,
    namespace,
    topology,
    ...({ deadLetterIndex: 'scan' } as object),
  });
  try {
    await ops.queues().catch(() => undefined); // connect first: the query is what is timed
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    trace?.start();
    let found: number;
    if (mode === 'job' || mode === 'trace') found = (await ops.job(arg)).events.length;
    else if (mode === 'search') found = (await ops.dead.search(JSON.parse(arg), 50)).length;
    else found = (await ops.dead.replay(JSON.parse(arg), { ratePerSecond: 0 })).replayed;
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const cpuMs = cpuMsSince(cpu);
    const phases = trace?.phases();
    process.stdout.write(
      `${JSON.stringify({ ms, found, rssMb: process.resourceUsage().maxRSS / 1024, cpuMs, ...(phases ? { phases } : {}) })}\n`,
    );
  } finally {
    await ops.close();
  }
}

/** The process's CPU time (user and system) since `from`, ms: what a lookup costs the machine. */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
}

/** amqplib's channel internals the trace wraps (lib/channel.js). */
interface TracedChannel {
  sentKeys?: string[];
  sendImmediately(method: number, fields: Record<string, unknown>): unknown;
  registerConsumer(tag: string, callback: (m: unknown) => unknown): void;
}

/**
 * Mode `trace`: the lookup's timeline, ms from its start: the first channel open-ok and qos-ok, and per
 * stream read (`<stream>@last` or `<stream>@offset`) its basic.consume sent and its first record. Wraps
 * amqplib's channel internals in this process only.
 */
function traceReads(): { start(): void; phases(): Record<string, number> } {
  // amqplib's package exports no subpaths: its files beside its entry (the same module both builds load)
  const lib = join(dirname(require.resolve('amqplib')), 'lib');
  const { BaseChannel } = require(join(lib, 'channel')) as { BaseChannel: { prototype: TracedChannel } };
  const { ChannelModel, Channel } = require(join(lib, 'channel_model')) as {
    ChannelModel: { prototype: { createChannel(...a: unknown[]): Promise<unknown> } };
    Channel: { prototype: { prefetch(...a: unknown[]): Promise<unknown> } };
  };
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  let t0 = 0;
  const phases: Record<string, number> = {};
  const mark = (key: string) => {
    if (t0 > 0 && phases[key] === undefined) phases[key] = Math.round((now() - t0) * 10) / 10;
  };
  const byTag = new Map<string, string>();
  const createChannel = ChannelModel.prototype.createChannel;
  ChannelModel.prototype.createChannel = async function (this: unknown, ...a: unknown[]) {
    const channel = await createChannel.apply(this, a);
    mark('channel open-ok');
    return channel;
  };
  const prefetch = Channel.prototype.prefetch;
  Channel.prototype.prefetch = async function (this: unknown, ...a: unknown[]) {
    const ok = await prefetch.apply(this, a);
    mark('qos-ok');
    return ok;
  };
  const send = BaseChannel.prototype.sendImmediately;
  BaseChannel.prototype.sendImmediately = function (this: TracedChannel, method, fields) {
    if (method === ((60 << 16) | 20) && t0 > 0) {
      const at = (fields.arguments as Record<string, unknown> | undefined)?.['x-stream-offset'];
      const stream = String(fields.queue).replace(/^.*\.warren\./, '');
      let key = `${stream}@${at === 'last' ? 'last' : 'offset'}`;
      for (let n = 2; phases[`${key} consume`] !== undefined; n += 1)
        key = `${stream}@${at === 'last' ? 'last' : 'offset'}#${n}`;
      mark(`${key} consume`);
      this.sentKeys ??= [];
      this.sentKeys.push(key);
      if (fields.consumerTag) byTag.set(String(fields.consumerTag), key);
    }
    return send.call(this, method, fields);
  };
  const register = BaseChannel.prototype.registerConsumer;
  BaseChannel.prototype.registerConsumer = function (this: TracedChannel, tag, callback) {
    const sent = this.sentKeys?.[this.sentKeys.length - 1];
    return register.call(this, tag, (m: unknown) => {
      const key = byTag.get(tag) ?? sent;
      if (key !== undefined && m !== null) mark(`${key} first record`);
      return callback(m);
    });
  };
  return {
    start: () => {
      t0 = now();
    },
    phases: () => ({ ...phases, done: Math.round((now() - t0) * 10) / 10 }),
  };
}

/** One cold read of the last record of `stream`, timed after connecting. */
async function floor(url: string, stream: string): Promise<void> {
  const connection = await amqp.connect(url, { noDelay: true });
  try {
    await (await connection.createChannel()).checkQueue(stream);
    const started = process.hrtime.bigint();
    const channel = await connection.createChannel();
    await channel.prefetch(1);
    await new Promise<void>((resolve, reject) => {
      channel
        .consume(stream, (m) => (m === null ? undefined : resolve()), {
          noAck: false,
          arguments: { 'x-stream-offset': 'last' },
        })
        .catch(reject);
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.stdout.write(
      `${JSON.stringify({ ms, found: 1, rssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
    );
  } finally {
    await connection.close();
  }
}

/** A stream consumer joining `channel` without waiting for its consume-ok (as the lookup's kept channel). */
function consumeBound(
  channel: amqp.Channel,
  queue: string,
  offset: unknown,
  callback: (m: amqp.ConsumeMessage) => void,
): void {
  const joined = consumeNoWait(channel, queue, (m) => (m === null ? undefined : callback(m)), {
    'x-stream-offset': offset,
  });
  if (!joined) throw new Error(`could not join a consumer on ${queue} without its consume-ok`);
}

/** The history index's key hash (src/history/index-state.ts historyKeyHash). */
function fnv1a(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i += 1) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Mode `bound`: how fast a lookup of one design could be at best, from a fresh process, timed like `job`
 * (after connecting): only the design's stream reads, in its order, with bare amqplib on a kept channel
 * (prefetch 1, each read's consumer joining without its consume-ok, as the lookup does) and the history's
 * last chunk on a channel beside it. Designs (`arg` = `<design>:<job id>`; the bench's history, where job
 * N's events are in batch ⌊3N/1000⌋, indexed into a base):
 * - `r3`: today's chain: the newest checkpoint (at `last`), the job's shard (at its offset), the batch (at
 *   its offset); beside them, the history's last chunk, ended by 10 ms without a record;
 * - `r2`: no batch read (the job's events in its index entry);
 * - `r1`: nothing but reads at `last` (the checkpoint and the history's last chunk): every design's floor;
 * - suffix `m` (`r1m`, `r2m`, `r3m`): the history's end found by a marker this process appends (waits for
 *   it, no quiet); suffix `q3`: a quiet of 3 ms instead of 10.
 * Prints the ms of each step from the start.
 */
async function bound(url: string, namespace: string, arg: string): Promise<void> {
  const [design, job] = arg.split(':') as [string, string];
  const history = `${namespace}.warren.history`;
  const connection = await amqp.connect(url, { noDelay: true });
  try {
    await (await connection.createChannel()).checkQueue(history);
    const cpu = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const at = () => Math.round(Number(process.hrtime.bigint() - t0) / 1e5) / 10;
    const phases: Record<string, number> = {};
    const open = (prefetch: number) =>
      connection.createChannel().then(async (c) => {
        await c.prefetch(prefetch);
        return c;
      });
    const keptP = open(1);
    const tailP = open(1000);
    const quietMs = design.includes('q3') ? 3 : 10;
    const marker = design.includes('m') ? `bound.${randomBytes(6).toString('hex')}` : undefined;
    const publisher = marker === undefined ? undefined : connection.createConfirmChannel();
    const tail = tailP
      .then(
        (c) =>
          new Promise<void>((resolve) => {
            let n = 0;
            let timer = setTimeout(resolve, 500);
            consumeBound(c, history, 'last', (m) => {
              n += 1;
              phases['tail first record'] ??= at();
              if (marker !== undefined) {
                if (m.properties.messageId === marker) resolve();
                return;
              }
              clearTimeout(timer);
              const seen = n;
              timer = setTimeout(() => setImmediate(() => (n === seen ? resolve() : undefined)), quietMs);
            });
            if (marker !== undefined)
              void publisher!.then((p) => p.publish('', history, Buffer.from('{}'), { messageId: marker }));
          }),
      )
      .then(() => {
        phases['tail end'] = at();
      });
    const read = (c: amqp.Channel, queue: string, offset: number | 'last') =>
      new Promise<amqp.ConsumeMessage>((resolve) =>
        consumeBound(c, queue, offset, (m) => {
          if (offset === 'last' || Number(m.properties.headers?.['x-stream-offset']) >= offset) resolve(m);
          else c.ack(m);
        }),
      );
    const kept = await keptP;
    phases['kept channel ready'] = at();
    const cp = JSON.parse((await read(kept, `${history}.checkpoints`, 'last')).content.toString()) as {
      d: { base: { n: number; runs: [number, number][] } };
    };
    phases.checkpoint = at();
    if (!design.startsWith('r1')) {
      const { n, runs } = cp.d.base;
      await read(kept, `${history}.index`, runs[0]![0] + (fnv1a(job) % n));
      phases.shard = at();
      if (design.startsWith('r3')) {
        await read(kept, history, Math.floor((Number(job.slice('job-'.length)) * 3) / 1000));
        phases.batch = at();
      }
    }
    await tail;
    const ms = at();
    process.stdout.write(
      `${JSON.stringify({ ms, found: 3, rssMb: process.resourceUsage().maxRSS / 1024, cpuMs: cpuMsSince(cpu), phases })}\n`,
    );
  } finally {
    await connection.close();
  }
}

/** Mode `serve`: a process that only serves lookups, until its stdin closes. */
async function serve(root: string, url: string, namespace: string, cacheBytes: string): Promise<void> {
  const { createWarren } = require(join(root, 'src')) as typeof import('../../src');
  const topology = defineTopology({ queues: { bench: {} } });
  const cpu = process.cpuUsage();
  const started = Date.now();
  const history = {
    serveLookups: true,
    ...(cacheBytes === '' ? {} : { lookupCacheBytes: Number(cacheBytes) }),
  };
  const warren = await createWarren({ url, namespace, topology, history });
  await warren.start();
  while (warren.health().lookupServer?.ready !== true) await new Promise((r) => setTimeout(r, 20));
  const rssMb = () => Math.round(process.memoryUsage().rss / 1024 ** 2);
  const ready = { warmMs: Date.now() - started, warmCpuMs: cpuMsSince(cpu), rssMb: rssMb() };
  process.stdout.write(`${JSON.stringify({ ...ready, ...warren.health().lookupServer })}\n`);
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.on('end', resolve));
  process.stdout.write(`${JSON.stringify({ ...warren.health().lookupServer, rssMb: rssMb() })}\n`);
  // the whole namespace it declared (delay levels, queues, streams): left behind, a few runs' worth of
  // quorum queues take RabbitMQ 3.10 past its file handle limit, and it stops accepting connections
  await warren.removeNamespace({ force: true });
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
