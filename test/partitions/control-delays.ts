/**
 * The raw amqplib control of the partition suite's delayed jobs: the same cluster in network namespaces, the
 * same nemesis schedule (shape, seed, duration) and the same clients beside the same nodes as a suite run,
 * with no warren at all. What warren's delay levels do with RabbitMQ's own parts, done by hand: each client
 * publishes a confirmed, persistent message every 125 ms (8/s, the suite's rate) to a quorum queue whose
 * queue-wide TTL (8 s) dead-letters it, at-least-once, into a second one (7 s), which dead-letters it
 * into the target quorum queue; each client consumes the target (prefetch 10, an ack on receipt). Every
 * client reconnects (to its home node first, then the others) when its connection goes. After the schedule:
 * heal, stop publishing, wait until both holds are empty, then the verdict: messages the broker confirmed
 * that no consumer received (lost), and what each queue still holds.
 *
 * With `--topology levels` the messages take warren's own delay path instead of the two holds: the delay
 * levels of the suite's workload (test/partitions/workload-config.ts: quorum, 9 levels of 100 ms units), planned
 * by warren's planner and declared here with amqplib (a topic exchange and a quorum queue per level, at-least-once
 * dead-lettering into the level below, exchange-to-exchange bindings for the 0 bits, the delivery exchange into the
 * target), each message published to the route warren would take for a delay of 1-16 s, as the workload's delayed
 * jobs; what this leaves out of warren is its client code.
 *
 * With `--target warren` the target is declared as warren declares a quorum job queue (`x-delivery-limit` 10 and a
 * dead-letter exchange into a parking queue) instead of a bare quorum queue: a message returned to it ten times
 * is dead-lettered (at most once, by the broker) instead of delivered again.
 *
 *   node dist/test/partitions/control-delays.js [--shape random-node] [--seed 20261205] [--duration 180] [--nodes 5]
 *     [--topology holds|levels] [--target plain|warren] [--chase]
 *   (isolated-leader and clock-skew only with --chase)
 *   (as root; WARREN_TEST_SERVER=3.10|4.3, default 4.3; builds and removes its cluster)
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import * as amqp from 'amqplib';
import {
  delayDeliveryPattern,
  delayLevelPattern,
  delayRoute,
  planDelayLevels,
} from '../../src/topology/delay-levels';
import { createNaming } from '../../src/topology/naming';
import { delayLevelAssertion } from '../../src/topology/queue-arguments';
import { Cluster, cleanSync, netsplit } from './cluster';
import { exitWhenSettled, startControlClient, type ControlClient } from './control-client';
import { PARTITION_DELAY } from './workload-config';
import {
  CLIENTS,
  cutGroups,
  nodeNames,
  type NemesisOp,
  planNemesis,
  SHAPES,
  type Shape,
  withClients,
} from './nemesis';

const HOLD_1 = 'split-control-hold-8s';
const HOLD_2 = 'split-control-hold-7s';
const TARGET = 'split-control-target';
/** With `--target warren`: the target's dead letters, as warren parks a job queue's (its DLX, fanout, and queue). */
const TARGET_DLX = 'split-control-target.dlx';
const TARGET_DEAD = 'split-control-target.dead';
const LEVELS = planDelayLevels(
  createNaming('split-control'),
  PARTITION_DELAY.unitMs,
  PARTITION_DELAY.levels,
  'quorum',
);
/** The orchestrator's `--topology`, handed to the clients it starts through the environment. */
const TOPOLOGY =
  (process.env.CONTROL_TOPOLOGY ?? process.argv[process.argv.indexOf('--topology') + 1]) === 'levels'
    ? 'levels'
    : 'holds';
/**
 * The orchestrator's `--target`: `plain` (a quorum queue, no arguments) or `warren` (as warren declares a quorum
 * job queue: `x-delivery-limit` 10, the topology's default, and a dead-letter exchange into a parking queue).
 */
const TARGET_KIND =
  (process.env.CONTROL_TARGET ?? process.argv[process.argv.indexOf('--target') + 1]) === 'warren'
    ? 'warren'
    : 'plain';
const QUEUES = [
  ...(TOPOLOGY === 'levels' ? LEVELS.levels.map((l) => l.name) : [HOLD_1, HOLD_2]),
  TARGET,
  ...(TARGET_KIND === 'warren' ? [TARGET_DEAD] : []),
];
const iso = (t: number | undefined) => (t === undefined ? '-' : new Date(t).toISOString());
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (event: Record<string, unknown>) => console.log(JSON.stringify({ ...event, t: Date.now() }));

/** The holds dead-letter at-least-once (which needs reject-publish), through the default exchange. */
async function declare(channel: amqp.Channel): Promise<void> {
  if (TOPOLOGY === 'levels') return declareLevels(channel);
  const hold = (ttlMs: number, next: string) => ({
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      'x-message-ttl': ttlMs,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': next,
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    },
  });
  await channel.assertQueue(HOLD_1, hold(8_000, HOLD_2));
  await channel.assertQueue(HOLD_2, hold(7_000, TARGET));
  await declareTarget(channel);
}

async function declareTarget(channel: amqp.Channel): Promise<void> {
  if (TARGET_KIND === 'plain') {
    await channel.assertQueue(TARGET, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    return;
  }
  await channel.assertExchange(TARGET_DLX, 'fanout', { durable: true });
  await channel.assertQueue(TARGET_DEAD, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await channel.bindQueue(TARGET_DEAD, TARGET_DLX, '');
  await channel.assertQueue(TARGET, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 10, 'x-dead-letter-exchange': TARGET_DLX },
  });
}

/** warren's delay levels (plan-queues.ts's planDelayQueues), declared with amqplib. */
async function declareLevels(channel: amqp.Channel): Promise<void> {
  await declareTarget(channel);
  for (const level of LEVELS.levels) await channel.assertExchange(level.name, 'topic', { durable: true });
  await channel.assertExchange(LEVELS.deliveryExchange, 'topic', { durable: true });
  await channel.bindQueue(TARGET, LEVELS.deliveryExchange, delayDeliveryPattern(LEVELS, TARGET));
  for (const level of LEVELS.levels) {
    const next = level.level === 0 ? LEVELS.deliveryExchange : LEVELS.levels[level.level - 1]!.name;
    const assertion = delayLevelAssertion('quorum', level.ttlMs, next);
    await channel.assertQueue(level.name, { durable: true, arguments: { ...assertion.arguments } });
    await channel.bindQueue(level.name, level.name, delayLevelPattern(LEVELS, level.level, 1));
    await channel.bindExchange(next, level.name, delayLevelPattern(LEVELS, level.level, 0));
  }
}

/** Runs `session` on a connection to the urls in turn, again after every loss, until `stopped()`. */
async function reconnecting(
  urls: readonly string[],
  stopped: () => boolean,
  session: (connection: amqp.ChannelModel, closed: Promise<void>) => Promise<void>,
): Promise<void> {
  for (let attempt = 0; !stopped(); attempt++) {
    const url = urls[attempt % urls.length]!;
    try {
      const connection = await amqp.connect(`${url}?heartbeat=5`, { timeout: 5_000 });
      const closed = new Promise<void>((resolve) => connection.once('close', () => resolve()));
      connection.on('error', () => undefined);
      log({ e: 'connected', url });
      await session(connection, closed);
      await connection.close().catch(() => undefined);
    } catch (error) {
      log({ e: 'disconnected', url, error: String(error) });
      await sleep(1_000);
    }
  }
}

async function publish(client: string, urls: readonly string[]): Promise<void> {
  let stop = false;
  createInterface({ input: process.stdin }).on('line', () => (stop = true));
  let n = 0;
  await reconnecting(
    urls,
    () => stop,
    async (connection, closed) => {
      const channel = await connection.createConfirmChannel();
      channel.on('error', () => undefined);
      await declare(channel);
      let lost = false;
      void closed.then(() => (lost = true));
      while (!stop && !lost) {
        const id = `${client}-${++n}`;
        const delayMs = TOPOLOGY === 'levels' ? 1_000 + Math.floor(Math.random() * 15_000) : 15_000;
        log({ e: 'publish', id, due: Date.now() + delayMs });
        const route =
          TOPOLOGY === 'levels' ? delayRoute(LEVELS, delayMs, TARGET) : { exchange: '', routingKey: HOLD_1 };
        channel.publish(
          route.exchange,
          route.routingKey,
          Buffer.from(id),
          { messageId: id, persistent: true, mandatory: true },
          (error) => log({ e: error ? 'nacked' : 'confirmed', id }),
        );
        await sleep(125);
      }
      // confirms the broker still holds after the heal must not keep this client waiting forever
      if (!lost) await Promise.race([channel.waitForConfirms().catch(() => undefined), sleep(15_000)]);
    },
  );
}

async function consume(urls: readonly string[]): Promise<void> {
  let stop = false;
  createInterface({ input: process.stdin }).on('line', () => (stop = true));
  await reconnecting(
    urls,
    () => stop,
    async (connection, closed) => {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await declare(channel);
      await channel.prefetch(10, false);
      await channel.consume(TARGET, (message) => {
        if (!message) return log({ e: 'cancelled' });
        log({ e: 'received', id: message.properties.messageId });
        channel.ack(message);
      });
      await Promise.race([
        closed,
        new Promise<void>((resolve) => createInterface({ input: process.stdin }).on('line', () => resolve())),
      ]);
    },
  );
}

function start(server: string, client: string, role: string, urls: readonly string[]): ControlClient {
  return startControlClient(server, client, __filename, [role, client, urls.join(',')], {
    CONTROL_TOPOLOGY: TOPOLOGY,
    CONTROL_TARGET: TARGET_KIND,
  });
}

async function depths(server: string, cluster: Cluster): Promise<Record<string, number> | undefined> {
  const result = await netsplit(
    server,
    ['exec', 'c1', process.execPath, join(__dirname, 'queue-depths.js'), cluster.url(1), ...QUEUES],
    60_000,
  );
  if (!result.ok) return undefined;
  const rows = result.out
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { queue: string; messages: number });
  return Object.fromEntries(rows.map((row) => [row.queue, row.messages]));
}

const CHASED_SHAPES: readonly Shape[] = ['random-node', 'one-way', 'pause', 'isolated-leader', 'clock-skew'];
/** Shapes whose fault is "the leader's node": a control has no cron leader, so it runs them only chasing. */
const LEADER_SHAPES: readonly Shape[] = ['isolated-leader', 'clock-skew'];

/**
 * `--chase`: the fault of a random-node, one-way or pause step falls on the node that leads the most of the
 * control's quorum queues at that moment, instead of the seed's node, so that every fault makes delay levels
 * with messages in flight elect a new leader (what the suite's 3.10 losses had in common: a level led by the
 * faulted node when a message expired there). The isolated-leader and clock-skew shapes isolate the cron
 * leader's node in the suite; here that node is the levels' leader, on the same schedule (same seed, same
 * times); clock skew's skewed client clock has no counterpart in a control (it moves cron ticks, not expiries).
 */
async function chased(cluster: Cluster, shape: Shape, op: NemesisOp): Promise<NemesisOp> {
  if (op.op !== 'cut' && op.op !== 'pause' && op.op !== 'isolate-leader') return op;
  const led = await cluster.quorumLeaders('split-control');
  if ((led === undefined || led.size === 0) && op.op === 'isolate-leader')
    return {
      op: 'cut',
      label: 'n1 isolated (leaders not read)',
      grudges: cutGroups([['n1'], nodeNames(cluster.nodes).slice(1)], cluster.nodes),
    };
  if (led === undefined || led.size === 0) return op;
  const node = [...led.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]![0];
  const others = nodeNames(cluster.nodes).filter((n) => n !== `n${node}`);
  if (op.op === 'pause') return { op: 'pause', node };
  if (shape === 'random-node' || op.op === 'isolate-leader')
    return {
      op: 'cut',
      label: `n${node} isolated (leads ${led.get(node)})`,
      grudges: cutGroups([[`n${node}`], others], cluster.nodes),
    };
  if (shape === 'one-way')
    return {
      op: 'cut',
      label: `n${node} deaf to the others (leads ${led.get(node)})`,
      grudges: withClients({ [`n${node}`]: others.map((from) => ({ from, p: 1 })) }, cluster.nodes),
    };
  throw new Error(`--chase takes ${CHASED_SHAPES.join(', ')}, not ${shape}`);
}

async function orchestrate(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      shape: { type: 'string', default: 'random-node' },
      seed: { type: 'string', default: '20261205' },
      duration: { type: 'string', default: '180' },
      nodes: { type: 'string', default: '5' },
      topology: { type: 'string', default: 'holds' },
      target: { type: 'string', default: 'plain' },
      chase: { type: 'boolean', default: false },
    },
  });
  const shape = values.shape as Shape;
  if (!SHAPES.includes(shape)) throw new Error(`unknown shape '${shape}'`);
  if (values.chase && !CHASED_SHAPES.includes(shape))
    throw new Error(`--chase takes ${CHASED_SHAPES.join(', ')}, not ${shape}`);
  if (!values.chase && LEADER_SHAPES.includes(shape))
    throw new Error(
      `${shape} isolates a leader's node: a control has no cron leader, so run it with --chase`,
    );
  const server = process.env.WARREN_TEST_SERVER ?? '4.3';
  const cluster = new Cluster(server, Number(values.nodes));
  const durationMs = Number(values.duration) * 1_000;
  process.on('SIGINT', () => {
    cleanSync();
    process.exit(130);
  });
  try {
    await cluster.up();
    const publishers = CLIENTS.map((c) => start(server, c, 'publish', cluster.urlsFor(c)));
    const consumers = CLIENTS.map((c) => start(server, c, 'consume', cluster.urlsFor(c)));
    const began = Date.now();
    let paused: number | undefined;
    for (const step of planNemesis(shape, cluster.nodes, durationMs, Number(values.seed))) {
      await sleep(began + step.atMs - Date.now());
      const op = values.chase ? await chased(cluster, shape, step.op) : step.op;
      if (op.op === 'cut') await cluster.cut(op.grudges);
      else if (op.op === 'heal') await cluster.heal();
      else if (op.op === 'pause') {
        paused = op.node;
        await cluster.signal(op.node, 'pause');
      } else if (op.op === 'resume') await cluster.signal(paused ?? op.node, 'resume');
      else if (op.op === 'skew') continue;
      else throw new Error(`control-delays runs cuts, heals and pauses only, not ${op.op}`);
      const label = op.op === 'cut' ? op.label : op.op === 'pause' ? `n${op.node} paused` : op.op;
      console.log(`control: ${label} at ${new Date().toISOString()}`);
    }
    await sleep(began + durationMs - Date.now());
    await cluster.heal();
    for (const publisher of publishers) publisher.stop();
    await Promise.all(publishers.map((p) => p.exited));
    // the holds take 15 s; then wait until both are empty (at-least-once: a dead letter waits for its target)
    await sleep(20_000);
    let held: Record<string, number> | undefined;
    for (const deadline = Date.now() + 180_000; Date.now() < deadline; await sleep(5_000)) {
      held = await depths(server, cluster);
      if (held !== undefined && (held[HOLD_1] ?? 1) === 0 && (held[HOLD_2] ?? 1) === 0) break;
    }
    await sleep(10_000);
    for (const consumer of consumers) consumer.stop();
    await Promise.all(consumers.map((c) => c.exited));
    const received = new Set(
      consumers.flatMap((c) => c.events.filter((e) => e.e === 'received').map((e) => e.id!)),
    );
    const confirmed = publishers.flatMap((p) =>
      p.events.filter((e) => e.e === 'confirmed').map((e) => e.id!),
    );
    const published = publishers.flatMap((p) => p.events.filter((e) => e.e === 'publish'));
    const lost = confirmed.filter((id) => !received.has(id));
    const when = (id: string, e: string) =>
      publishers.flatMap((p) => p.events).find((event) => event.id === id && event.e === e);
    for (const id of lost)
      console.log(
        `control-delays: lost ${id}: published ${iso(when(id, 'publish')?.t)}, confirmed ${iso(when(id, 'confirmed')?.t)}, due ${iso(when(id, 'publish')?.due)}`,
      );
    const after = await depths(server, cluster);
    const backlog = (await cluster.quorumHeld('split-control'))?.filter(
      (q) => q.checkedOut + q.deadLetterWaiting + q.deadLetterUnconfirmed > 0,
    );
    console.log(
      `control-delays: held beyond the message counts (queue ready/checked-out/dead-letter waiting/unconfirmed): ${backlog === undefined ? 'not read' : backlog.map((q) => `${q.queue} ${q.ready}/${q.checkedOut}/${q.deadLetterWaiting}/${q.deadLetterUnconfirmed}`).join(', ') || 'none'}`,
    );
    console.log(
      `control-delays (${TOPOLOGY}, ${TARGET_KIND} target${values.chase ? ", chasing the levels' leaders" : ''}): RabbitMQ ${server}, ${shape}, seed ${values.seed}, ${cluster.nodes} nodes, ${values.duration} s: published ${published.length}, confirmed ${confirmed.length}, received ${received.size}, lost ${lost.length}${lost.length > 0 ? ` (${lost.join(' ')})` : ''}; queues after: ${JSON.stringify(after)}`,
    );
  } finally {
    cleanSync();
  }
}

const [role, client, urls] = process.argv.slice(2);
const main =
  role === 'publish'
    ? publish(client!, urls!.split(','))
    : role === 'consume'
      ? consume(urls!.split(','))
      : orchestrate();
exitWhenSettled(main);
