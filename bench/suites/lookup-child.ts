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
 *   node dist/bench/suites/lookup-child.js <dist root> <job|trace|search|replay|floor> <url> <namespace> <arg>
 */
import { dirname, join } from 'node:path';
import * as amqp from 'amqplib';
import { defineTopology } from '../../src';
import type { createOps as CreateOps } from '../../src/ops';

async function main(): Promise<void> {
  const [root, mode, url, namespace, arg] = process.argv.slice(2) as [string, string, string, string, string];
  if (mode === 'floor') return floor(url, arg);
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
    const started = process.hrtime.bigint();
    trace?.start();
    let found: number;
    if (mode === 'job' || mode === 'trace') found = (await ops.job(arg)).events.length;
    else if (mode === 'search') found = (await ops.dead.search(JSON.parse(arg), 50)).length;
    else found = (await ops.dead.replay(JSON.parse(arg), { ratePerSecond: 0 })).replayed;
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const phases = trace?.phases();
    process.stdout.write(
      `${JSON.stringify({ ms, found, rssMb: process.resourceUsage().maxRSS / 1024, ...(phases ? { phases } : {}) })}\n`,
    );
  } finally {
    await ops.close();
  }
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

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
