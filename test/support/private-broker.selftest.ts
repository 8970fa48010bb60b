/**
 * Self-check for the private RabbitMQ nodes (not a node:test file; the resilience tests rely on it):
 *
 *   npx tsc -p tsconfig.json && node dist/test/support/private-broker.selftest.js
 *
 * Single node: start (twice: idempotent), durable quorum queue + 10 persistent confirmed messages,
 * graceful restart keeps them, close_all_connections reaches the client, SIGKILL + start keeps
 * everything that was confirmed, clean. Cluster: start, 3 running members, a quorum queue led by w1,
 * SIGKILL w1, a new leader is elected, w1 comes back and rejoins, no message lost, clean.
 * Prints how long each step took. Exits non-zero on the first failed check; always cleans up.
 */
import * as amqp from 'amqplib';
import * as net from 'node:net';
import {
  type ClusterNodeIndex,
  cleanCluster,
  cleanSingleNode,
  killClusterNode,
  killSingleNode,
  quorumLeader,
  rabbitCtl,
  restartSingleNode,
  runningClusterNodes,
  startCluster,
  startClusterNode,
  startSingleNode,
  stopSingleNode,
  waitForPort,
} from './private-broker';
import { waitFor } from './wait-for';

const SHARED_BROKER_PORT = 5672;
const QUEUE = 'warren.selftest.qq';
const timings: Array<{ step: string; ms: number }> = [];

async function timed<T>(step: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await fn();
  const ms = Math.round(performance.now() - started);
  timings.push({ step, ms });
  console.log(`  ${step}: ${ms} ms`);
  return result;
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`selftest: ${what}`);
  console.log(`  ok - ${what}`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Polls `probe` every 200 ms until it gives a value (a node name, the messages back), with a deadline. */
function poll<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  return waitFor(probe, { timeoutMs, intervalMs: 200, what: `selftest: ${what}` }) as Promise<T>;
}

/** Opens a connection + confirm channel with error listeners attached, runs fn, closes. */
async function withChannel<T>(url: string, fn: (ch: amqp.ConfirmChannel) => Promise<T>): Promise<T> {
  const conn = await amqp.connect(url);
  conn.on('error', () => undefined);
  try {
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => undefined);
    return await fn(ch);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

async function declareQueue(ch: amqp.Channel): Promise<void> {
  await ch.assertQueue(QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
}

async function publishConfirmed(ch: amqp.ConfirmChannel, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    ch.sendToQueue(QUEUE, Buffer.from(`m${i}`), { persistent: true });
  }
  await ch.waitForConfirms();
}

/** Reads every message without acking (closing the channel returns them) and gives their bodies. */
async function peekAll(url: string): Promise<string[]> {
  return withChannel(url, async (ch) => {
    const bodies: string[] = [];
    for (;;) {
      const msg = await ch.get(QUEUE, { noAck: false });
      if (msg === false) return bodies;
      bodies.push(msg.content.toString());
    }
  });
}

/** After a restart a quorum queue needs a moment to recover its log; wait until `expected` are back. */
async function awaitMessages(url: string, expected: number, timeoutMs: number): Promise<string[]> {
  return poll(`${expected} messages in ${QUEUE}`, timeoutMs, async () => {
    try {
      const bodies = await peekAll(url);
      return bodies.length === expected ? bodies : undefined;
    } catch {
      return undefined;
    }
  });
}

const expectedBodies = (n: number): string[] => Array.from({ length: n }, (_, i) => `m${i}`);
const sameBodies = (a: string[], b: string[]): boolean =>
  a.length === b.length && [...a].sort().join(',') === [...b].sort().join(',');

async function singleNodeChecks(): Promise<void> {
  console.log('single node (wsolo, 127.0.0.1:5690)');
  await timed('clean before start (no node)', cleanSingleNode);
  const node = await timed('start (fresh data)', startSingleNode);
  await timed('start again (already running)', startSingleNode);
  check(await portOpen(node.port), `${node.name} accepts connections on ${node.port}`);

  await withChannel(node.url, async (ch) => {
    await declareQueue(ch);
    await publishConfirmed(ch, 0, 10);
  });
  check(
    sameBodies(await peekAll(node.url), expectedBodies(10)),
    '10 persistent messages confirmed in the quorum queue',
  );

  await timed('restart (graceful stop + start)', restartSingleNode);
  const afterRestart = await timed('quorum queue recovered after restart', () =>
    awaitMessages(node.url, 10, 30_000),
  );
  check(sameBodies(afterRestart, expectedBodies(10)), 'the 10 messages survived the restart');

  // close_all_connections reaches the client as 'close' with 320 CONNECTION_FORCED
  const conn = await amqp.connect(node.url);
  conn.on('error', () => undefined);
  const closed = new Promise<string>((resolve) =>
    conn.on('close', (err?: Error) => resolve(err?.message ?? 'no error')),
  );
  await timed('rabbitCtl close_all_connections', () =>
    rabbitCtl(node.name, 'close_all_connections', 'selftest'),
  );
  const reason = await Promise.race([
    closed,
    new Promise<string>((r) => setTimeout(() => r('timeout'), 10_000)),
  ]);
  check(
    /CONNECTION_FORCED/.test(reason) && /selftest/.test(reason),
    `the client saw the forced close (${reason})`,
  );

  let refused = false;
  await rabbitCtl('rabbit@localhost', 'status').catch(() => {
    refused = true;
  });
  check(refused, 'rabbitCtl refuses to touch the shared node rabbit@localhost');

  // confirmed messages in a quorum queue are on disk: a crash loses none of them
  await withChannel(node.url, (ch) => publishConfirmed(ch, 10, 5));
  await timed('kill (SIGKILL)', killSingleNode);
  check(!(await portOpen(node.port)), 'port 5690 closed after the kill');
  await timed('kill again (not running)', killSingleNode);
  await timed('start after kill (crash recovery)', startSingleNode);
  const afterCrash = await timed('quorum queue recovered after crash', () =>
    awaitMessages(node.url, 15, 30_000),
  );
  check(sameBodies(afterCrash, expectedBodies(15)), 'all 15 confirmed messages survived SIGKILL');

  await timed('stop (graceful)', stopSingleNode);
  await timed('stop again (not running)', stopSingleNode);
  check(!(await portOpen(node.port)), 'port 5690 closed after the stop');
  await timed('clean', cleanSingleNode);
  await timed('clean again (nothing left)', cleanSingleNode);
}

async function clusterChecks(): Promise<void> {
  console.log('cluster (w1..w3, 127.0.0.1:5681-5683)');
  await timed('cluster clean before start', cleanCluster);
  const nodes = await timed('cluster start (fresh)', startCluster);
  await timed('cluster start again (already running)', startCluster);
  const running = await runningClusterNodes();
  check(
    sameBodies(
      running,
      nodes.map((n) => n.name),
    ),
    `3 running members: ${running.join(', ')}`,
  );
  for (const n of nodes) check(await portOpen(n.port), `${n.name} accepts connections on ${n.port}`);

  const [w1, w2] = nodes as [(typeof nodes)[0], (typeof nodes)[0], (typeof nodes)[0]];
  await withChannel(w1.url, async (ch) => {
    await declareQueue(ch);
    await publishConfirmed(ch, 0, 10);
  });
  const leader = await poll('a quorum leader', 15_000, () => quorumLeader('w2', QUEUE));
  check(leader === w1.name, `the quorum queue declared on w1 is led by ${leader}`);

  const index: ClusterNodeIndex = 1;
  await timed('kill node 1 (SIGKILL)', () => killClusterNode(index));
  const newLeader = await timed('new quorum leader elected', () =>
    poll('a new leader', 30_000, async () => {
      const l = await quorumLeader('w2', QUEUE);
      return l !== undefined && l !== w1.name ? l : undefined;
    }),
  );
  check(newLeader !== w1.name, `leadership moved to ${newLeader}`);
  check((await runningClusterNodes(2)).length === 2, '2 running members while w1 is down');
  check(
    sameBodies(await awaitMessages(w2.url, 10, 15_000), expectedBodies(10)),
    'no message lost with w1 down',
  );

  await timed('start node 1 (rejoins)', () => startClusterNode(index));
  await timed('start node 1 again (already running)', () => startClusterNode(index));
  check((await runningClusterNodes()).length === 3, '3 running members after w1 came back');
  check(
    sameBodies(await awaitMessages(w1.url, 10, 15_000), expectedBodies(10)),
    'w1 serves all 10 messages again',
  );

  await timed('cluster clean', cleanCluster);
  for (const n of nodes) check(!(await portOpen(n.port)), `port ${n.port} closed after clean`);
}

async function main(): Promise<void> {
  const started = performance.now();
  const sharedUpBefore = await portOpen(SHARED_BROKER_PORT);
  let failed = false;
  try {
    await singleNodeChecks();
    await clusterChecks();
  } catch (err) {
    failed = true;
    console.error(err);
  } finally {
    await cleanSingleNode();
    await cleanCluster();
  }
  if (sharedUpBefore) {
    try {
      await waitForPort(SHARED_BROKER_PORT, 5_000);
      console.log('  ok - the shared broker on 5672 is still up');
    } catch (err) {
      failed = true;
      console.error('selftest: the shared broker on 5672 went away', err);
    }
  } else {
    console.log('  (the shared broker on 5672 was not running before the selftest)');
  }
  console.log('\ntimings');
  for (const t of timings) console.log(`  ${String(t.ms).padStart(7)} ms  ${t.step}`);
  console.log(`  ${String(Math.round(performance.now() - started)).padStart(7)} ms  total`);
  console.log(failed ? '\nSELFTEST FAILED' : '\nSELFTEST PASSED');
  process.exitCode = failed ? 1 : 0;
}

void main();
