import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createOps } from '../../src/ops';
import { createNaming } from '../../src/topology';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { opsAppOptions, startOpsWorker as worker } from '../fixtures/ops-jobs';
import {
  createBrokerUser,
  deleteBrokerUser,
  FULL_PERMISSIONS,
  type BrokerUser,
} from '../support/broker-user';
import { configDir, deadLogConfigDir, failsWith, runCli } from '../support/run-cli';
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

/**
 * The warren command against the management API: topology diff and apply, management credentials kept out of
 * every output, a non-default management user, and what a foreign publisher's control characters become in a
 * terminal. Split from cli.test.ts, which neared the 120 s a file may take on a loaded machine.
 */
describe('the warren command and the management API', () => {
  afterEach(() => cleanup());

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
