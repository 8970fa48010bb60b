/**
 * warren/ops across real worker processes, on a private node with the management plugin (wmgmt):
 * pause and resume with three forked workers, one of which loses its connection during the pause and
 * reconnects paused; topology diff / verify / apply through the management API, and the CLI's exit codes.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as amqp from 'amqplib';
import { createOps, ManagementApiError, type WarrenOps } from '../../src/ops';
import { FaultWork, faultTopology, type WorkEvent } from '../fixtures/fault-jobs';
import { cleanManagementNode, startManagementNode, type ManagementNode } from '../support/private-broker';
import { configDir, runCli } from '../support/run-cli';
import { testNamespace, testProfile } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { ForkedWorkers, type ForkedWorker } from './forked-workers';

let node: ManagementNode;
const events: (WorkEvent & { at: number })[] = [];
const workers = new ForkedWorkers((event) => events.push({ ...event, at: Date.now() }));
const opened: WarrenOps[] = [];

function opsFor(namespace: string, management = true): WarrenOps {
  const ops = createOps({
    ...testProfile(namespace),
    url: node.url,
    topology: faultTopology,
    jobs: [FaultWork],
    replyTimeoutMs: 1000,
    ...(management ? { management: { url: node.managementUrl } } : {}),
  });
  opened.push(ops);
  return ops;
}

async function management(path: string, method = 'GET'): Promise<Response> {
  return fetch(`${node.managementUrl}/api/${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
  });
}

/** Closes a worker's AMQP connection from the broker's side, found by its connection name. */
async function closeConnectionOf(worker: ForkedWorker): Promise<void> {
  const name = `fault-worker ${worker.pid}`;
  const find = async () => {
    const list = (await (await management('connections')).json()) as {
      name: string;
      client_properties?: { connection_name?: string };
    }[];
    return list.find((c) => c.client_properties?.connection_name === name);
  };
  const connection = await waitFor(find, { what: `${name}'s connection`, timeoutMs: 15_000 });
  await management(`connections/${encodeURIComponent(connection.name)}`, 'DELETE');
  await waitFor(async () => (await find()) === undefined, { what: `${name}'s connection to close` });
}

function ran(id: string, event: 'start' | 'done' = 'done') {
  return events.find((e) => e.event === event && 'id' in e && e.id === id);
}

describe('warren/ops across processes (management node)', () => {
  before(async () => {
    node = await startManagementNode();
  });
  afterEach(async () => {
    for (const worker of workers.all) if (worker.alive) worker.child.kill('SIGCONT');
    await workers.killAll();
    for (const ops of opened.splice(0)) await ops.close();
  });
  after(() => cleanManagementNode());

  it('pauses three worker processes; one reconnects during the pause and stays paused', async () => {
    const namespace = testNamespace('opsp');
    const ops = opsFor(namespace);
    const [a, b, c] = [1, 2, 3].map(() => workers.fork({ urls: [node.url], namespace, concurrency: 2 })) as [
      ForkedWorker,
      ForkedWorker,
      ForkedWorker,
    ];
    await waitFor(() => a.ready && b.ready && c.ready, { what: 'three workers', timeoutMs: 30_000 });
    const before = await ops.processes();
    assert.deepEqual(before.processes.map((p) => p.pid).sort(), [a.pid, b.pid, c.pid].sort());
    assert.equal(before.silent, 0);

    // The worker misses the pause broadcast: stopped, and its connection (with its control queue) gone.
    c.child.kill('SIGSTOP');
    const stuck = await ops.processes();
    assert.deepEqual(stuck.processes.map((p) => p.pid).sort(), [a.pid, b.pid].sort());
    assert.equal(stuck.silent, 1, 'a stopped process is reported as not answering');
    await closeConnectionOf(c);
    await ops.publish('fault.work', { id: 'inflight', ms: 3000 }, { jobId: 'inflight' });
    await waitFor(() => ran('inflight', 'start'), { what: 'the in-flight job' });

    const paused = await ops.pause('work');
    const pausedAt = Date.now();
    assert.deepEqual(paused.confirmed.map((p) => p.pid).sort(), [a.pid, b.pid].sort());
    assert.equal(paused.silent, 0);
    const done = await waitFor(() => ran('inflight'), {
      what: 'the in-flight job to finish',
      timeoutMs: 15_000,
    });
    assert.ok(done.at >= pausedAt, 'the running job finished after the pause');

    c.child.kill('SIGCONT');
    const back = await waitFor(async () => (await ops.processes()).processes.find((p) => p.pid === c.pid), {
      what: 'the cut worker to reconnect',
      timeoutMs: 30_000,
    });
    assert.deepEqual(back.queues.find((q) => q.key === 'work')!.holders, ['operator']);

    const late = workers.fork({ urls: [node.url], namespace, concurrency: 2 });
    await waitFor(() => late.ready, { what: 'a fourth worker', timeoutMs: 30_000 });
    for (const id of ['held-1', 'held-2', 'held-3'])
      await ops.publish('fault.work', { id, ms: 1 }, { jobId: id });
    const [work] = await ops.queues();
    assert.deepEqual(
      { ready: work!.ready, consumers: work!.consumers, paused: work!.paused },
      { ready: 3, consumers: 0, paused: true },
    );
    assert.equal(ran('held-1', 'start'), undefined);

    const resumed = await ops.resume('work');
    assert.equal(resumed.confirmed.length, 4);
    await waitFor(() => ran('held-1') && ran('held-2') && ran('held-3'), { what: 'the held jobs' });
    assert.equal((await ops.queues())[0]!.consumers, 4);
  });

  it('diffs, applies and verifies the topology through the management API', async () => {
    const namespace = testNamespace('opsd');
    const ops = opsFor(namespace);
    const missing = await ops.topology.diff();
    assert.equal(missing.inSync, false);
    assert.ok(missing.drift.every((d) => d.kind === 'missing'));
    assert.ok(missing.drift.some((d) => d.entity === 'queue' && d.name === `${namespace}.work`));

    const applied = await ops.topology.apply();
    assert.ok(applied.created!.includes(`queue ${namespace}.work`));
    assert.deepEqual((await ops.topology.diff()).drift, []);
    const verified = await ops.topology.verify();
    assert.equal(verified.ok, true, JSON.stringify(verified.checks.filter((c) => !c.ok)));
    assert.deepEqual(
      [...new Set(verified.checks.filter((c) => c.subject === 'work').map((c) => c.check))],
      ['exists', 'queue type', 'delivery limit', 'dead-letter wiring', 'binding'],
    );
    assert.equal((await ops.queues())[0]!.unacked, 0);

    // Drift: a binding removed, the parking queue deleted, a stray queue in the namespace.
    const connection = await amqp.connect(node.url);
    try {
      const ch = await connection.createChannel();
      await ch.unbindQueue(`${namespace}.work`, `${namespace}.jobs`, 'fault.*');
      await ch.deleteQueue(`${namespace}.work.dead`);
      await ch.assertQueue(`${namespace}.stray`, { durable: true, arguments: { 'x-expires': 600_000 } });
      await ch.close();
    } finally {
      await connection.close();
    }
    const drift = (await ops.topology.diff()).drift.map((d) => `${d.kind} ${d.entity} ${d.name}`);
    assert.ok(drift.includes(`missing queue ${namespace}.work.dead`), drift.join('\n'));
    assert.ok(
      drift.includes(`missing binding ${namespace}.jobs -> ${namespace}.work 'fault.*'`),
      drift.join('\n'),
    );
    assert.ok(drift.includes(`extra queue ${namespace}.stray`), drift.join('\n'));
    const failed = (await ops.topology.verify()).checks.filter((c) => !c.ok).map((c) => c.check);
    assert.deepEqual(failed.sort(), ['binding', 'dead-letter wiring']);

    // apply puts back what is missing and leaves the stray queue alone
    await ops.topology.apply();
    assert.deepEqual(
      (await ops.topology.diff()).drift.map((d) => `${d.kind} ${d.entity} ${d.name}`),
      [`extra queue ${namespace}.stray`],
    );
  });

  it('reports a queue of other settings as different, and apply never re-creates it', async () => {
    const namespace = testNamespace('opsx');
    const ops = opsFor(namespace);
    const connection = await amqp.connect(node.url);
    try {
      const ch = await connection.createChannel();
      await ch.assertQueue(`${namespace}.work`, { durable: true, arguments: { 'x-queue-type': 'classic' } });
      await ch.close();
    } finally {
      await connection.close();
    }
    const different = (await ops.topology.diff()).drift.find((d) => d.name === `${namespace}.work`)!;
    assert.equal(different.kind, 'different');
    assert.ok(
      different.differences.includes('type: planned "quorum", broker "classic"'),
      String(different.differences),
    );
    await assert.rejects(ops.topology.apply(), { code: 'TOPOLOGY_CONFLICT' });
    const still = (await ops.topology.diff()).drift.find((d) => d.name === `${namespace}.work`)!;
    assert.equal(still.kind, 'different');
  });

  it('fails with MANAGEMENT_FAILED on wrong credentials', async () => {
    const ops = createOps({
      ...testProfile(testNamespace('opsc')),
      url: node.url,
      topology: faultTopology,
      jobs: [FaultWork],
      management: { url: node.managementUrl, password: 'wrong' },
    });
    opened.push(ops);
    await assert.rejects(ops.topology.diff(), (error: unknown) => {
      assert.ok(error instanceof ManagementApiError);
      assert.equal(error.code, 'MANAGEMENT_FAILED');
      assert.equal(error.status, 401);
      return true;
    });
  });

  it('exits 2 from topology diff and verify on drift, 0 when in sync (the CI check)', async () => {
    const namespace = testNamespace('opsi');
    const cwd = configDir(namespace, { url: node.url, management: { url: node.managementUrl } });
    const drifted = await runCli(['topology', 'diff'], { cwd });
    assert.equal(drifted.code, 2, drifted.stderr);
    assert.match(drifted.stdout, /^DRIFT +ENTITY +NAME/);
    assert.equal((await runCli(['topology', 'verify'], { cwd })).code, 2);
    assert.equal((await runCli(['topology', 'apply', '--yes'], { cwd })).code, 0);
    const clean = await runCli(['topology', 'diff'], { cwd });
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.equal(clean.stdout.trim(), 'in sync: the broker matches the plan');
    const verify = await runCli(['topology', 'verify', '--json'], { cwd });
    assert.equal(verify.code, 0);
    assert.equal(JSON.parse(verify.stdout).ok, true);
  });
});
