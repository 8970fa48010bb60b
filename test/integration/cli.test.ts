import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOps } from '../../src/ops';
import { createNaming } from '../../src/topology';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { BuildReport, opsAppOptions, SendEmail, type JobLog } from '../fixtures/ops-jobs';
import {
  createBrokerUser,
  deleteBrokerUser,
  FULL_PERMISSIONS,
  type BrokerUser,
} from '../support/broker-user';
import { configDir, deadLogConfigDir, ROOT, runCli, type CliRun } from '../support/run-cli';
import {
  cleanup,
  deletePlanEntities,
  MANAGEMENT_URL,
  rawConnection,
  testNamespace,
  testWarren,
} from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/** Control characters and bidirectional overrides a terminal would act on, as a foreign publisher sends. */
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2K\u001b[1Afake\u202eexe.txt\u009b1m\u007f';
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function failsWith(run: CliRun, pattern: RegExp, code = 1): void {
  assert.equal(run.code, code, `exit code (stderr: ${run.stderr})`);
  assert.match(run.stderr, pattern);
  assert.equal(run.stderr.trim().split('\n').length, 1, 'one line');
}

async function worker(namespace: string, log: JobLog) {
  const warren = await testWarren({
    ...opsAppOptions(namespace),
    handlers: [new SendEmail(log), new BuildReport()],
  });
  await warren.start();
  return warren;
}

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

  it('needs the management API for diff, and applies the topology with --yes', async () => {
    const namespace = testNamespace('cli');
    const cwd = configDir(namespace);
    failsWith(await runCli(['topology', 'diff'], { cwd }), /management API.*\[MANAGEMENT_NOT_CONFIGURED\]/);
    failsWith(await runCli(['topology', 'apply'], { cwd }), /refusing to apply the topology without --yes/);
    const ops = createOps(opsAppOptions(namespace));
    try {
      const run = await runCli(['topology', 'apply', '--yes'], { cwd });
      assert.equal(run.code, 0, run.stderr);
      assert.equal((await ops.queues())[0]!.exists, true);
      // the streams are applied with the plan: diff finds nothing missing, verify checks each one
      const withManagement = ['--management-url', MANAGEMENT_URL];
      const diff = await runCli(['topology', 'diff', ...withManagement], { cwd });
      assert.equal(diff.code, 0, diff.stdout + diff.stderr);
      assert.equal(diff.stdout.trim(), 'in sync: the broker matches the plan');
      const verify = await runCli(['topology', 'verify', '--json', ...withManagement], { cwd });
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      const checks = (JSON.parse(verify.stdout) as { checks: { subject: string; check: string }[] }).checks;
      assert.deepEqual(
        checks.filter((c) => c.subject === `${namespace}.warren.job-control`).map((c) => c.check),
        ['exists', 'queue type'],
      );
    } finally {
      await ops.close();
      await deletePlanEntities(ops.plan);
    }
  });

  it('never prints a management password, from the URL or from the environment, in errors or output', async () => {
    const namespace = testNamespace('cli');
    const cwd = configDir(namespace);
    const viaUrl = await runCli(
      ['topology', 'diff', '--management-url', 'http://warren-ops:S3cretPw@127.0.0.1:9'],
      { cwd },
    );
    failsWith(viaUrl, /cannot reach the management API at http:\/\/127\.0\.0\.1:9.*\[MANAGEMENT_FAILED\]/);
    assert.doesNotMatch(viaUrl.stderr + viaUrl.stdout, /S3cretPw/);
    const viaEnv = await runCli(['queues'], {
      cwd,
      env: { WARREN_MANAGEMENT_URL: 'http://warren-ops:S3cretPw@127.0.0.1:9' },
    });
    failsWith(viaEnv, /cannot reach the management API at http:\/\/127\.0\.0\.1:9/);
    assert.doesNotMatch(viaEnv.stderr + viaEnv.stdout, /S3cretPw/);
  });

  it('reads the real management API as a non-default user, from the URL or from the environment', async () => {
    const namespace = testNamespace('cli');
    await worker(namespace, []);
    const cwd = configDir(namespace);
    let user: BrokerUser | undefined;
    try {
      user = await createBrokerUser('cli-mgmt', FULL_PERMISSIONS, ['management']);
      const url = new URL(MANAGEMENT_URL);
      url.username = user.name;
      url.password = user.password;
      const inUrl = await runCli(['topology', 'verify', '--management-url', url.href], { cwd });
      assert.equal(inUrl.code, 0, inUrl.stdout + inUrl.stderr);
      assert.match(inUrl.stdout, /^ +SUBJECT +CHECK/);
      const env = {
        WARREN_MANAGEMENT_URL: MANAGEMENT_URL,
        WARREN_MANAGEMENT_USER: user.name,
        WARREN_MANAGEMENT_PASSWORD: user.password,
      };
      const queues = await runCli(['queues'], { cwd, env });
      assert.equal(queues.code, 0, queues.stderr);
      assert.match(queues.stdout, /\nemail +quorum +0 +0 +1 +0/, 'unacked read through the management API');
      const wrong = await runCli(['queues'], {
        cwd,
        env: { ...env, WARREN_MANAGEMENT_PASSWORD: 'wrong-Pw-1' },
      });
      failsWith(wrong, /the management API at http:\/\/127\.0\.0\.1:\d+ answered 401/);
      assert.doesNotMatch(wrong.stderr, /wrong-Pw-1/);
      for (const run of [inUrl, queues])
        assert.doesNotMatch(run.stdout + run.stderr, new RegExp(user.password));
    } finally {
      await deleteBrokerUser(user);
    }
  });

  it('shows control characters from the broker as escapes in dead ls and in processes', async () => {
    const namespace = testNamespace('cli');
    const dir = deadLogConfigDir(namespace, { replyTimeoutMs: 700 });
    const warren = await testWarren({
      ...deadLogOptions(namespace),
      handlers: [new Charge(new ChargeSwitch()), new Refund(), new StalePing()],
    });
    await warren.start();
    const naming = createNaming(namespace);
    const raw = await rawConnection();
    try {
      const channel = await raw.createConfirmChannel();
      channel.sendToQueue(naming.queue('billing'), Buffer.from('{}'), {
        contentType: 'application/json',
        type: `billing.${HOSTILE}`,
        messageId: `id-${HOSTILE}`,
      });
      await channel.waitForConfirms();
      // A forged process on the control exchange: anyone who may write there answers `warren processes`.
      const forger = await raw.createChannel();
      const { queue } = await forger.assertQueue('', { exclusive: true });
      await forger.bindQueue(queue, naming.controlExchange(), '');
      await forger.consume(queue, (message) => {
        if (!message) return;
        const process = {
          id: `forged-${HOSTILE}`,
          host: `host${HOSTILE}`,
          pid: 4242,
          version: `0.1.0${HOSTILE}`,
          startedAt: new Date().toISOString(),
          connected: true,
          queues: [{ key: 'billing', consuming: true, paused: false, holders: [], activeJobs: 0 }],
          breakers: [],
          isLeader: false,
          schedules: [],
        };
        forger.sendToQueue(
          message.properties.replyTo as string,
          Buffer.from(JSON.stringify({ v: 1, command: 'status', process })),
          { correlationId: message.properties.correlationId as string, contentType: 'application/json' },
        );
      });
      const dead = await waitFor(
        async () => {
          const run = await runCli(['dead', 'ls'], { cwd: dir });
          return run.stdout.includes('billing.') ? run : undefined;
        },
        { what: 'the letter in warren dead ls', intervalMs: 200 },
      );
      assert.equal(dead.code, 0, dead.stderr);
      assert.doesNotMatch(dead.stdout, RAW_CONTROL);
      assert.match(
        dead.stdout,
        /billing\.\\x1b\]0;pwned\\x07\\x1b\[2K\\x1b\[1Afake\\u202eexe\.txt\\x9b1m\\x7f/,
      );
      const lines = dead.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 2, 'one header and one letter, nothing moved the cursor');
      assert.equal(lines[1]!.indexOf('billing'), lines[0]!.indexOf('QUEUE'), 'the columns still line up');

      const processes = await runCli(['processes'], { cwd: dir });
      assert.equal(processes.code, 0, processes.stderr);
      assert.match(processes.stdout, /host\\x1b\]0;pwned\\x07/);
      assert.doesNotMatch(processes.stdout, RAW_CONTROL);
      const json = await runCli(['processes', '--json'], { cwd: dir });
      assert.doesNotMatch(json.stdout, RAW_CONTROL);
      const forged = (JSON.parse(json.stdout) as { processes: { host: string }[] }).processes.find((p) =>
        p.host.startsWith('host'),
      );
      assert.equal(forged?.host, `host${HOSTILE}`, '--json keeps the exact value, escaped as JSON');
    } finally {
      await raw.close();
    }
  });
});
