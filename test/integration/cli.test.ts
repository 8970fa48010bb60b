import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOps } from '../../src/ops';
import { opsAppOptions, startOpsWorker as worker, type JobLog } from '../fixtures/ops-jobs';
import { configDir, failsWith, ROOT, runCli } from '../support/run-cli';
import { cleanup, testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

describe('the warren command', () => {
  afterEach(() => cleanup());

  it('prints its help and version, and is the package bin', async () => {
    const help = await runCli(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: warren <command>/);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    assert.equal((await runCli(['--version'])).stdout.trim(), pkg.version);
    assert.equal(pkg.bin.warren, './dist/src/cli/main.js');
    assert.match(readFileSync(join(ROOT, pkg.bin.warren), 'utf8'), /^#!\/usr\/bin\/env node/);
  });

  it('fails with one line on a wrong command, option or argument, and without a config', async () => {
    const cwd = configDir(testNamespace('cli'));
    failsWith(await runCli(['frobnicate'], { cwd }), /unknown command 'frobnicate'.*\[CLI_USAGE\]/);
    failsWith(await runCli(['topology', 'nuke'], { cwd }), /unknown command 'topology nuke'.*\[CLI_USAGE\]/);
    failsWith(
      await runCli(['queues', '--colour'], { cwd }),
      /^warren: unknown option '--colour' \(see warren --help\) \[CLI_USAGE\]\n$/,
    );
    failsWith(await runCli(['pause'], { cwd }), /missing <queue> \[CLI_USAGE\]/);
    failsWith(await runCli(['processes', '--timeout', 'soon'], { cwd }), /--timeout must be.*\[CLI_USAGE\]/);
    failsWith(await runCli(['queues'], { cwd: '/' }), /no config.*\[CLI_CONFIG\]/);
    failsWith(await runCli(['queues', '--config', 'nope.js'], { cwd }), /does not exist \[CLI_CONFIG\]/);
  });

  it('loads an ES module config, and refuses a .ts config this Node cannot strip', async () => {
    const namespace = testNamespace('cli');
    const dir = mkdtempSync(join(tmpdir(), 'warren-cli-'));
    const fixture = join(ROOT, 'dist', 'test', 'fixtures', 'ops-jobs.js');
    writeFileSync(
      join(dir, 'warren.config.mjs'),
      `import { opsAppOptions } from ${JSON.stringify(fixture)};\nexport default () => opsAppOptions(${JSON.stringify(namespace)});\n`,
    );
    const plan = await runCli(['topology', 'plan', '--json'], { cwd: dir });
    assert.equal(plan.code, 0, plan.stderr);
    assert.ok(JSON.parse(plan.stdout).some((e: { name: string }) => e.name === `${namespace}.email`));
    writeFileSync(join(dir, 'warren.config.ts'), 'export default {} as object;\n');
    if (!(process.features as { typescript?: unknown }).typescript)
      failsWith(
        await runCli(['topology', 'plan', '--config', 'warren.config.ts'], { cwd: dir }),
        /compile it to \.js/,
      );
  });

  it('fails with one line when the broker is unreachable', async () => {
    const cwd = configDir(testNamespace('cli'));
    const run = await runCli(['queues', '--url', 'amqp://guest:guest@127.0.0.1:1'], { cwd });
    failsWith(run, /cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1.*\[CONNECTION_FAILED\]/);
  });

  it('plans the topology without a broker', async () => {
    const namespace = testNamespace('cli');
    const run = await runCli(['topology', 'plan', '--url', 'amqp://127.0.0.1:1'], {
      cwd: configDir(namespace),
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`exchange +${namespace}\\.warren\\.control +fanout durable`));
    assert.match(run.stdout, new RegExp(`queue +${namespace}\\.email +job durable`));
    // warren's own streams are rows of the plan too, with their retention
    assert.match(
      run.stdout,
      new RegExp(
        `queue +${namespace}\\.warren\\.job-control +stream durable x-queue-type="stream" x-max-age="31708800s"`,
      ),
    );
    assert.match(
      run.stdout,
      new RegExp(`queue +${namespace}\\.warren\\.schedules +stream durable x-queue-type="stream"\n`),
    );
    assert.doesNotMatch(run.stdout, /warren\.dead-log/, 'the log is planned only with deadLetterLog');
  });

  it('lists queues and processes, as tables and as JSON', async () => {
    const namespace = testNamespace('cli');
    const warren = await worker(namespace, []);
    const cwd = configDir(namespace);
    const table = await runCli(['queues'], { cwd });
    assert.equal(table.code, 0, table.stderr);
    assert.match(
      table.stdout,
      /^QUEUE +TYPE +READY +UNACKED +CONSUMERS +DEAD +PAUSED\nemail +quorum +0 +- +1 +0/,
    );
    const processes = JSON.parse((await runCli(['processes', '--json'], { cwd })).stdout);
    assert.deepEqual(
      processes.processes.map((p: { id: string }) => p.id),
      [warren.processId],
    );
    const text = (await runCli(['processes'], { cwd })).stdout;
    assert.match(text, new RegExp(`^ID +HOST +PID.*\\n${warren.processId.slice(0, 8)} .* ${process.pid} `));
  });

  it('refuses to pause without --yes when there is no terminal to ask', async () => {
    const namespace = testNamespace('cli');
    await worker(namespace, []);
    const cwd = configDir(namespace);
    failsWith(await runCli(['pause', 'email'], { cwd }), /refusing to pause email without --yes/);
    const ops = createOps(opsAppOptions(namespace));
    try {
      assert.equal((await ops.queues())[0]!.paused, false);
    } finally {
      await ops.close();
    }
  });

  it('pauses and resumes a queue with --yes, naming the processes that confirmed', async () => {
    const namespace = testNamespace('cli');
    const warren = await worker(namespace, []);
    const cwd = configDir(namespace);
    const paused = await runCli(['pause', 'email', '--yes', '--json'], { cwd });
    assert.equal(paused.code, 0, paused.stderr);
    assert.deepEqual(
      JSON.parse(paused.stdout).confirmed.map((p: { id: string }) => p.id),
      [warren.processId],
    );
    assert.equal(warren.health().consumers.find((c) => c.queue === 'email')!.paused, true);
    const resumed = await runCli(['resume', 'email', '--yes'], { cwd });
    assert.match(resumed.stdout, /^resumed email: confirmed by 1 process\(es\)/);
    assert.equal(warren.health().consumers.find((c) => c.queue === 'email')!.paused, false);
    failsWith(await runCli(['pause', 'emial', '--yes'], { cwd }), /unknown queue 'emial'.*\[UNKNOWN_QUEUE\]/);
  });

  it('publishes a job given as JSON, and refuses bad JSON and unknown jobs', async () => {
    const namespace = testNamespace('cli');
    const log: JobLog = [];
    await worker(namespace, log);
    const cwd = configDir(namespace);
    const run = await runCli(['publish', 'email.send', '{"id":"cli","ms":1}'], { cwd });
    assert.match(run.stdout, /^published email\.send as job /);
    await waitFor(() => log.some((e) => e.event === 'done' && e.id === 'cli'), { what: 'the job' });
    failsWith(await runCli(['publish', 'email.send', '{id:'], { cwd }), /not valid JSON/);
    failsWith(await runCli(['publish', 'email.nope', '{}'], { cwd }), /\[UNKNOWN_JOB\]/);
  });

  it('lists schedules, and says when none is held', async () => {
    const run = await runCli(['schedules'], { cwd: configDir(testNamespace('cli')) });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'no schedule is declared, in the registry or held by a running process');
  });
});
