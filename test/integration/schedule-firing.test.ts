import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createOps, type ScheduleOverview } from '../../src/ops';
import { BuildReport, opsAppOptions } from '../fixtures/ops-jobs';
import { configDir, runCli } from '../support/run-cli';
import { cleanup, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

const EVERY_SECOND = '* * * * * *';
const NO_SCHEDULER = /no process runs the scheduler, so it does not fire until one does/;

/** The registry stream is state, not topology: the test deletes it itself. */
async function deleteRegistry(namespace: string) {
  const connection = await rawConnection();
  const channel = await connection.createChannel();
  await channel.deleteQueue(`${namespace}.warren.schedules`).catch(() => undefined);
  await connection.close();
}

const row = (rows: readonly ScheduleOverview[], id: string) => {
  const found = rows.find((s) => s.id === id);
  assert.ok(found, `schedule ${id} listed (got ${rows.map((s) => s.id).join(', ')})`);
  return found;
};

describe('schedules are never silent', () => {
  const namespace = testNamespace('unfired');
  const ops = createOps({ ...opsAppOptions(namespace), replyTimeoutMs: 700 });
  after(async () => {
    await ops.close();
    await cleanup();
    await deleteRegistry(namespace);
  });

  it('says a schedule added where no process runs the scheduler fires nothing, until one does', async () => {
    const publisher = await testWarren({ ...opsAppOptions(namespace) });
    const added = await publisher.cron.add('report.build', EVERY_SECOND, {}, { id: 'orphan' });
    assert.equal(added.id, 'orphan');
    assert.equal(added.job, 'report.build');
    assert.equal(added.isFired, false);
    assert.match(added.warning ?? '', NO_SCHEDULER);

    const fromOps = await ops.addSchedule('report.build', EVERY_SECOND, {}, { id: 'orphan-ops' });
    assert.equal(fromOps.isFired, false);
    assert.match(fromOps.warning ?? '', /schedule 'orphan-ops' stored, but no process runs the scheduler/);
    await ops.pauseSchedule('orphan-ops');

    const before = await ops.schedules();
    const orphan = row(before, 'orphan');
    assert.deepEqual(
      [orphan.source, orphan.paused, orphan.isFired, orphan.notFired, orphan.heldBy, orphan.firedBy],
      ['registry', false, false, 'no-scheduler', [], undefined],
    );
    assert.equal(orphan.job, 'report.build');
    assert.ok(orphan.nextFireAt.getTime() > Date.now() - 1000, 'its next tick, from the pattern');
    const paused = row(before, 'orphan-ops');
    assert.deepEqual([paused.paused, paused.isFired, paused.notFired], [true, false, 'paused']);

    const cwd = configDir(namespace);
    const cliAdd = await runCli(
      ['schedules', 'add', 'report.build', EVERY_SECOND, '{}', '--id', 'orphan-cli'],
      {
        cwd,
      },
    );
    assert.equal(cliAdd.code, 0, cliAdd.stderr);
    assert.match(cliAdd.stdout, /^schedule orphan-cli added: report\.build on '\* \* \* \* \* \*'\n/);
    assert.match(cliAdd.stdout, /^warning: schedule 'orphan-cli' stored, but no process runs the scheduler/m);
    const listed = await runCli(['schedules'], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /FIRED BY\s+FIRES$/);
    assert.match(lines.find((l) => l.startsWith('orphan '))!, /no process holds it\s+no: no scheduler$/);
    assert.match(lines.find((l) => l.startsWith('orphan-ops '))!, /no: paused$/);
    const warning = lines.filter((l) => l.startsWith('warning: '));
    assert.equal(warning.length, 1, listed.stdout);
    assert.match(warning[0]!, /orphan, orphan-cli|orphan-cli, orphan/);
    assert.match(warning[0]!, /no process runs the scheduler/);
    assert.doesNotMatch(warning[0]!, /orphan-ops/, 'a pause is the operator’s choice, not a warning');

    const fired: string[] = [];
    const worker = await testWarren({
      ...opsAppOptions(namespace),
      handlers: [new BuildReport()],
      scheduler: { enabled: true },
    });
    worker.on('completed', (e) => fired.push(e.jobId));
    await worker.start();
    await waitFor(() => worker.cron.isLeader, { what: 'the scheduler to lead' });
    await waitFor(() => fired.some((id) => id.startsWith('orphan@')), {
      what: 'the stored schedule to fire once a scheduler runs',
    });
    const now = await waitFor(
      async () => {
        const rows = await ops.schedules();
        return row(rows, 'orphan').isFired ? rows : undefined;
      },
      { what: 'ops to see it fired' },
    );
    const firing = row(now, 'orphan');
    assert.deepEqual([firing.notFired, firing.firedBy], [undefined, worker.processId]);
    assert.equal(row(now, 'orphan-ops').notFired, 'paused');

    const again = await publisher.cron.add('report.build', EVERY_SECOND, {}, { id: 'orphan' });
    assert.deepEqual([again.isFired, again.warning], [true, undefined]);
    const cliNow = await runCli(['schedules'], { cwd });
    assert.equal(cliNow.code, 0, cliNow.stderr);
    assert.doesNotMatch(cliNow.stdout, /^warning: /m);
    assert.match(cliNow.stdout.split('\n').find((l) => l.startsWith('orphan '))!, /\byes$/);
    const json = await runCli(['schedules', 'add', 'report.build', EVERY_SECOND, '--id', 'fired', '--json'], {
      cwd,
    });
    assert.deepEqual(JSON.parse(json.stdout), { id: 'fired', action: 'upsert', isFired: true });
  });
});
