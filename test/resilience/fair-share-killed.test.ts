import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FairFaultWork, fairFaultTopology } from '../fixtures/fault-jobs';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { ForkedWorkers, type ForkedWorker } from './forked-workers';
import { privateWarren, useSingleNode } from './private-warren';

const TEST_TIMEOUT_MS = 180_000;
const FLOOD = 600;
const TENANTS = 10;
const PER_TENANT = 20;

describe('a worker process killed mid-flood on a queue with fair share (SIGKILL)', () => {
  let workers: ForkedWorkers | undefined;
  after(async () => {
    await workers?.killAll();
  });
  const node = useSingleNode();

  it('loses nothing: the jobs the killed worker held waiting in its scheduler or running all run elsewhere', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('fairkill');
    const ledger = new FaultLedger('fair share: worker SIGKILL mid-flood');
    const forked = new ForkedWorkers((event) => {
      if (event.event === 'done') ledger.ran(event.id);
    });
    workers = forked;
    const publisher = await privateWarren(node.url, {
      namespace,
      topology: fairFaultTopology,
      jobs: [FairFaultWork],
    });
    const spawnWorker = () =>
      forked.fork({ urls: [node.url], namespace, concurrency: 10, env: { FAULT_FAIR: '1' } });
    const pool: ForkedWorker[] = [spawnWorker(), spawnWorker()];
    await waitFor(() => pool.every((w) => w.ready), { timeoutMs: 30_000, what: 'two workers ready' });

    const publish = (id: string, tenant: string) =>
      ledger.track(id, publisher.publish('fault.fair', { id, ms: 20, tenant }, { jobId: id }));
    const flood = Array.from({ length: FLOOD }, (_, i) => publish(`flood-${i}`, 'flood'));
    const others = Array.from({ length: TENANTS * PER_TENANT }, (_, i) =>
      publish(`t${i % TENANTS}-${i}`, `tenant-${i % TENANTS}`),
    );
    await Promise.all([...flood, ...others]);

    await waitFor(() => forked.all.reduce((n, w) => n + w.done.size, 0) >= 150, {
      timeoutMs: 60_000,
      what: '150 completed jobs',
    });
    const victim = pool.sort((a, b) => b.unfinished().length - a.unfinished().length)[0]!;
    const at = Date.now();
    victim.child.kill('SIGKILL');
    const { signal } = await victim.exited;
    assert.equal(signal, 'SIGKILL');
    const orphans = victim.unfinished();
    spawnWorker();

    await waitFor(() => ledger.allConfirmedRan(), {
      timeoutMs: 90_000,
      what: () => `every confirmed job to run (${ledger.missing().length} missing)`,
    });
    const survivors = forked.all.filter((w) => w !== victim);
    for (const id of orphans)
      assert.ok(
        survivors.some((w) => (w.done.get(id) ?? 0) >= at),
        `job ${id}, running on the killed worker, ran on another`,
      );
    const row = ledger.report(Date.now() - at, 'SIGKILL until every confirmed job had run', {
      workers: forked.all.length,
      orphaned: orphans.length,
    });
    assert.equal(row.confirmed, FLOOD + TENANTS * PER_TENANT);
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
    for (const id of ledger.duplicateIds())
      assert.ok(victim.started.has(id), `duplicate ${id} was running on the killed worker`);
  });
});
