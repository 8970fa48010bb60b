/** The dashboard's HTTP API against the real broker: actions, their guards, and one snapshot for all. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type AuditEntry, type DashboardServer, startDashboardServer } from '../../src/ui';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

describe('dashboard API', () => {
  const namespace = testNamespace('uiapi');
  const state = new ChargeSwitch();
  const audit: AuditEntry[] = [];
  let warren: Warren<object>;
  let ops: WarrenOps;
  let server: DashboardServer;

  before(async () => {
    warren = await testWarren({
      ...deadLogOptions(namespace),
      handlers: [new Charge(state), new Refund(), new StalePing()],
    });
    await warren.start();
    ops = createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 300 });
    server = await startDashboardServer({
      ops,
      port: 0,
      authorize: (r) => ({ role: r.headers['x-role'] === 'admin' ? 'admin' : 'viewer', user: 'ada' }),
      audit: (entry) => audit.push(entry),
    });
  });

  after(async () => {
    await server?.close();
    await ops?.close();
    await cleanup();
  });

  async function admin() {
    const response = await fetch(`${server.url}api/session`, { headers: { 'x-role': 'admin' } });
    const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
    const session = (await response.json()) as { csrf: string; role: string };
    assert.equal(session.role, 'admin');
    return (action: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${server.url}api/actions/${action}`, {
        method: 'POST',
        headers: {
          'x-role': 'admin',
          cookie,
          origin: server.url.slice(0, -1),
          'content-type': 'application/json',
          'x-warren-csrf': session.csrf,
          ...headers,
        },
        body: JSON.stringify(body),
      });
  }

  it('purges only when the queue’s name is typed, and refuses a forged or cross-site request', async () => {
    await warren.publish('billing.charge', { id: 'x1', customer: { id: 'cu1' } });
    await waitFor(
      async () => (await ops.dead.count({ queue: 'billing', state: 'dead' })) === 1 || undefined,
      {
        what: 'one dead letter',
        intervalMs: 100,
      },
    );
    const post = await admin();
    const filter = { queue: 'billing', state: 'dead' } as const;
    assert.equal((await post('purge', { filter, confirm: 'billin' })).status, 400);
    assert.equal(
      (await post('purge', { filter, confirm: 'billing' }, { 'x-warren-csrf': 'forged' })).status,
      403,
    );
    assert.equal(
      (await post('purge', { filter, confirm: 'billing' }, { origin: 'http://evil.example' })).status,
      403,
    );
    assert.equal(await ops.dead.count(filter), 1);
    const done = await post('purge', { filter, confirm: 'billing' });
    assert.equal(done.status, 200);
    assert.equal(((await done.json()) as { purged: number }).purged, 1);
    assert.equal(await ops.dead.count(filter), 0);
    assert.deepEqual(
      audit.filter((a) => a.action === 'purge').map((a) => [a.who, a.outcome]),
      [
        ['ada', 'refused'],
        ['ada', 'done'],
      ],
    );
  });

  it('answers a replay while another process replays the log with 409 DEAD_LETTER_LOG_BUSY, and replays nothing', async () => {
    for (let i = 0; i < 4; i += 1)
      await warren.publish('billing.charge', { id: `b${i}`, customer: { id: 'cu2' } });
    const filter = { queue: 'billing', state: 'dead' } as const;
    await waitFor(async () => (await ops.dead.count(filter)) >= 4 || undefined, {
      what: 'four dead letters',
      intervalMs: 100,
    });
    const other = createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 300 });
    try {
      const slow = other.dead.replay(filter, { ratePerSecond: 4 }); // about a second
      await new Promise((resolve) => setTimeout(resolve, 200));
      const post = await admin();
      const refused = await post('replay', { filter });
      assert.equal(refused.status, 409);
      const body = (await refused.json()) as { code: string; error: string };
      assert.equal(body.code, 'DEAD_LETTER_LOG_BUSY');
      assert.match(body.error, /another process/);
      assert.ok((await slow).replayed >= 4);
    } finally {
      await other.close();
    }
  });

  it('shows each queue’s processing rate from the processes’ handled counters', async () => {
    type Snapshot = {
      queues: { key: string; rate?: number }[];
      processes: { queues: { key: string; handled?: number }[] }[];
    };
    const snapshot = async () => (await (await fetch(`${server.url}api/snapshot`)).json()) as Snapshot;
    const before = server.handler.snapshots.refreshes;
    await snapshot();
    await waitFor(() => server.handler.snapshots.refreshes > before || undefined, { what: 'a baseline' });
    state.fixed = true;
    const ids = Array.from({ length: 40 }, (_, i) => `rate-${i}`);
    for (const id of ids) await warren.publish('billing.charge', { id, customer: { id: 'r' } });
    await waitFor(() => ids.every((id) => state.ran.some((r) => r.id === id)) || undefined, {
      what: 'the 40 jobs ran',
    });
    const seen = await waitFor(
      async () => {
        const s = await snapshot();
        return (s.queues.find((q) => q.key === 'billing')?.rate ?? 0) > 0 ? s : undefined;
      },
      { what: 'a processing rate above 0 for billing', intervalMs: 100 },
    );
    const handled = seen.processes.flatMap((p) => p.queues).find((q) => q.key === 'billing')?.handled;
    assert.ok((handled ?? 0) >= 40, `the status reply counts handled deliveries (got ${handled})`);
    assert.equal(seen.queues.find((q) => q.key === 'stale')?.rate, 0, 'an idle queue runs at 0/s');
  });

  it('publishes a job as admin; a viewer may not', async () => {
    const post = await admin();
    state.fixed = true;
    const published = await post('publish', {
      job: 'billing.charge',
      data: { id: 'pub', customer: { id: 'c' } },
    });
    assert.equal(published.status, 200);
    await waitFor(() => state.ran.find((r) => r.id === 'pub'), { what: 'the published job ran' });
    const viewer = await post('publish', { job: 'billing.charge', data: {} }, { 'x-role': 'viewer' });
    assert.equal(viewer.status, 403);
  });

  it('feeds ten event streams from one snapshot refreshed at most once a second', async () => {
    const before = server.handler.snapshots.refreshes;
    const started = Date.now();
    const controllers = Array.from({ length: 10 }, () => new AbortController());
    const counts = new Array<number>(10).fill(0);
    await Promise.all(
      controllers.map(async (controller, i) => {
        const response = await fetch(`${server.url}api/events`, { signal: controller.signal });
        const reader = response.body!.getReader();
        void (async () => {
          for (;;) {
            const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
            if (done) return;
            counts[i]! += (
              Buffer.from(value!)
                .toString()
                .match(/event: snapshot/g) ?? []
            ).length;
          }
        })();
      }),
    );
    await waitFor(() => counts.every((c) => c >= 3) || undefined, { what: '3 snapshots on every stream' });
    const elapsedS = (Date.now() - started) / 1000;
    for (const c of controllers) c.abort();
    const refreshes = server.handler.snapshots.refreshes - before;
    assert.ok(
      refreshes <= Math.ceil(elapsedS) + 1,
      `${refreshes} broker reads in ${elapsedS} s for 10 streams`,
    );
  });
});
