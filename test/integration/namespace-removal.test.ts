import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NamespaceInUseError } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { ChildWorkers } from '../fixtures/child-workers';
import { removalAppOptions, type NamespaceWorkerMessage } from '../fixtures/namespace-worker';
import { failsWith, ROOT, runCli } from '../support/run-cli';
import { cleanup, MANAGEMENT_URL, rawConnection, testNamespace, testWarren } from '../support/test-broker';
import { passTime, waitFor } from '../support/wait-for';

const workers = new ChildWorkers<NamespaceWorkerMessage>('namespace-worker');
const opened: WarrenOps[] = [];

/**
 * Every name the test could see of a namespace, made here from the naming rules the docs state (not by
 * the code under test): the plan's entities, warren's fixed names, all delay levels, the markers.
 */
function candidates(namespace: string): string[] {
  const plan = createOps(removalAppOptions(namespace)).plan;
  const fixed = [
    'dead-log',
    'history',
    'schedules',
    'schedules.checkpoints',
    'job-control',
    'job-control.checkpoints',
    'leader',
    'cron-ledger',
    'removing',
    'aggregates',
    'aggregates.hours',
    'aggregates.days',
    'marks',
    'history.index',
    'dead-log.index',
  ];
  const levels = Array.from(
    { length: 40 },
    (_, i) => `${namespace}.warren.delay.${String(i).padStart(2, '0')}`,
  );
  return [
    ...plan.queues.map((q) => `queue ${q.name}`),
    ...plan.exchanges.map((e) => `exchange ${e.name}`),
    ...fixed.map((n) => `queue ${namespace}.warren.${n}`),
    ...['work', 'other'].map((k) => `queue ${namespace}.warren.paused.${k}`),
    ...levels.flatMap((n) => [`queue ${n}`, `exchange ${n}`]),
    `exchange ${namespace}.warren.delay.delivery`,
    `exchange ${namespace}.warren.control`,
    `exchange ${namespace}.warren.events`,
  ];
}

const watched = new Set<string>();

/**
 * The broker's queue and exchange names: the management API's listing of the vhost when the broker has
 * the plugin on (every name, so a name nobody foresaw shows too), else a passive declare of every name
 * the watched namespaces could have.
 */
async function brokerNames(): Promise<Set<string>> {
  const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
  const list = async (what: string) => {
    // The management API answers 500 now and then when a queue is deleted while it lists the vhost
    // (other test files run beside this one and delete theirs); a listing a moment later is whole.
    let response: Response;
    for (let attempt = 1; ; attempt += 1) {
      response = await fetch(`${MANAGEMENT_URL}/api/${what}/%2F?columns=name`, {
        headers: { authorization: auth },
      });
      if (response.status < 500 || attempt === 5) break;
      await response.body?.cancel();
      await passTime(200);
    }
    assert.equal(response.status, 200, `GET /api/${what}`);
    return ((await response.json()) as { name: string }[]).map((e) => `${what.slice(0, -1)} ${e.name}`);
  };
  try {
    const [queues, exchanges] = await Promise.all([list('queues'), list('exchanges')]);
    return new Set([...queues, ...exchanges]);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error; // fetch failed: no management plugin on this broker
  }
  const connection = await rawConnection();
  try {
    const names = [...new Set([...watched].flatMap(candidates))];
    const present = await Promise.all(
      names.map(async (entry) => {
        const [kind, name] = entry.split(' ') as ['queue' | 'exchange', string];
        const channel = await connection.createChannel();
        channel.on('error', () => undefined);
        const found = await (kind === 'queue' ? channel.checkQueue(name) : channel.checkExchange(name)).then(
          () => true,
          () => false,
        );
        if (found) await channel.close().catch(() => undefined);
        return found ? entry : undefined;
      }),
    );
    return new Set(present.filter((e): e is string => e !== undefined));
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** The entities whose name is in `namespace` but not in `except` (a nested namespace), sorted. */
function within(names: ReadonlySet<string>, namespace: string, except?: string): string[] {
  return [...names]
    .filter((e) => {
      const name = e.slice(e.indexOf(' ') + 1);
      return name.startsWith(`${namespace}.`) && (except === undefined || !name.startsWith(`${except}.`));
    })
    .sort();
}

async function forkReady(namespace: string, count: number) {
  const forked = Array.from({ length: count }, () => workers.fork([namespace]));
  await waitFor(() => forked.every((w) => w.messages.some((m) => m.kind === 'ready')), {
    timeoutMs: 30_000,
    what: `${count} workers of ${namespace} ready`,
  });
  return forked;
}

/** Answers are gathered for 3 s: a forked process on a loaded machine may take more than the default. */
function ops(namespace: string, replyTimeoutMs = 3000): WarrenOps {
  const client = createOps({ ...removalAppOptions(namespace), replyTimeoutMs });
  opened.push(client);
  return client;
}

/** Removes what a test left, through the call under test (forcing any process still there to stop). */
async function removeAll(...namespaces: string[]): Promise<void> {
  for (const namespace of namespaces)
    await createOps(removalAppOptions(namespace))
      .removeNamespace({ force: true })
      .catch(() => undefined);
}

/** After each test, pass or fail: its processes killed and every namespace it watched removed. */
async function removeWatched(): Promise<void> {
  await workers.killAll();
  await removeAll(...watched);
  watched.clear();
}

describe('removing a namespace', () => {
  afterEach(async () => {
    for (const client of opened.splice(0)) await client.close().catch(() => undefined);
    await removeWatched();
    await cleanup();
  });
  after(() => workers.killAll());

  it('refuses while other processes answer, stops them with force, and deletes only its own entities', async () => {
    const a = testNamespace('rm');
    const ab = `${a}.b`;
    const unrelated = testNamespace('rmx');
    for (const ns of [a, ab, unrelated]) watched.add(ns);
    const others = await forkReady(a, 2);
    await forkReady(ab, 1);
    await forkReady(unrelated, 1);
    const remover = await testWarren(removalAppOptions(a));
    const aOps = ops(a);
    await aOps.pause('work'); // a pause marker: state of the namespace, removed with it
    // The cron leader's first tick fills its ledger: every part that declares has run.
    const before = await waitFor(
      async () => {
        const names = await brokerNames();
        const ready = [a, ab].every((ns) =>
          [
            `queue ${ns}.warren.dead-log`,
            `queue ${ns}.warren.history`,
            `queue ${ns}.warren.schedules`,
            `queue ${ns}.warren.job-control`,
            `queue ${ns}.warren.leader`,
            `queue ${ns}.warren.cron-ledger`,
            `queue ${ns}.warren.delay.00`,
            `exchange ${ns}.warren.control`,
          ].every((n) => names.has(n)),
        );
        return ready && names.has(`queue ${a}.warren.paused.work`) ? names : undefined;
      },
      { timeoutMs: 20_000, what: 'both namespaces declared' },
    );
    const ownBefore = within(before, a, ab);
    assert.ok(ownBefore.length > 30, `namespace a has its entities: ${ownBefore.join(', ')}`);

    const refused = await remover.removeNamespace({ replyTimeoutMs: 3000 }).then(
      () => assert.fail('removed while other processes run'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof NamespaceInUseError, String(refused));
    assert.equal(refused.code, 'NAMESPACE_IN_USE');
    assert.equal(refused.timedOut, false);
    assert.deepEqual(
      refused.processes.map((p) => p.pid).sort(),
      others.map((w) => w.pid).sort(),
      'it names the other processes, not itself',
    );
    assert.equal(remover.health().connected, true, 'a refusal changes nothing');
    assert.deepEqual(within(await brokerNames(), a, ab), ownBefore, 'nothing deleted');

    const result = await remover.removeNamespace({ force: true, timeoutMs: 30_000, replyTimeoutMs: 3000 });
    assert.deepEqual(result.stopped.map((p) => p.pid).sort(), others.map((w) => w.pid).sort());
    assert.equal(remover.health().connected, false, 'the remover closed itself');
    for (const worker of others) assert.equal(worker.child.exitCode, null, 'the stopped processes live on');

    // Time itself is the point: a cron election or a reconnect that declared the namespace again would
    // do so within a second or two; none may, however long we look.
    await passTime(4000);
    const after = await brokerNames();
    assert.deepEqual(within(after, a, ab), [], 'nothing of namespace a is left or came back');
    assert.deepEqual(within(after, ab), within(before, ab), 'namespace a.b is untouched');
    assert.deepEqual(within(after, unrelated), within(before, unrelated), 'the unrelated one too');
    assert.equal((await ops(ab).processes()).processes.length, 1, "a.b's process still runs");
    assert.equal((await ops(a).processes()).processes.length, 0, 'no process of a answers');
  });

  it('fails naming the processes that still answer at the deadline, and deletes nothing', async () => {
    const a = testNamespace('rm');
    watched.add(a);
    const declarer = await testWarren(removalAppOptions(a));
    await declarer.close();
    // A process of an older warren: it answers `status` on the control exchange but knows no `sync-remove`.
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.bindQueue(queue, `${a}.warren.control`, '');
    const status = {
      id: 'old-warren',
      host: 'elsewhere',
      pid: 4242,
      version: '0.0.1',
      startedAt: new Date().toISOString(),
      connected: true,
      queues: [],
      breakers: [],
      isLeader: false,
      schedules: [],
    };
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        const request = JSON.parse(message.content.toString()) as { command: string };
        if (request.command !== 'status') return;
        channel.sendToQueue(
          message.properties.replyTo as string,
          Buffer.from(JSON.stringify({ v: 1, command: 'status', process: status })),
          { correlationId: message.properties.correlationId as string },
        );
      },
      { noAck: true },
    );
    try {
      const before = within(await brokerNames(), a);
      const error = await ops(a, 500)
        .removeNamespace({ force: true, timeoutMs: 1500 })
        .then(
          () => assert.fail('removed while a process still answers'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof NamespaceInUseError, String(error));
      assert.equal(error.timedOut, true);
      assert.deepEqual(error.processes, [{ id: 'old-warren', host: 'elsewhere', pid: 4242 }]);
      assert.match(
        error.message,
        /still answer after being asked to stop \(elsewhere:4242\); nothing was deleted/,
      );
      assert.deepEqual(within(await brokerNames(), a), before, 'nothing deleted, the removal marker gone');
    } finally {
      await connection.close();
    }
    await removeAll(a);
  });
});

/** A project directory whose `warren.config.js` is the removal fixture's application in `namespace`. */
function removalConfigDir(namespace: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'warren-cli-'));
  const fixture = join(ROOT, 'dist', 'test', 'fixtures', 'namespace-worker.js');
  writeFileSync(
    join(dir, 'warren.config.js'),
    `module.exports = { ...require(${JSON.stringify(fixture)}).removalAppOptions(${JSON.stringify(namespace)}), replyTimeoutMs: 3000 };\n`,
  );
  return dir;
}

/**
 * Runs the command on a terminal of its own (util-linux `script` gives it a pty) and types `answer` at
 * its question, as a person at a shell would.
 */
function runCliOnTerminal(args: readonly string[], cwd: string, answer: string) {
  const command = [process.execPath, join(ROOT, 'dist', 'src', 'cli', 'main.js'), ...args]
    .map((word) => `'${word.replace(/'/g, "'\\''")}'`)
    .join(' ');
  return new Promise<{ code: number; output: string }>((resolve) => {
    const child = execFile(
      'script',
      ['-qec', command, '/dev/null'],
      { cwd, timeout: 60_000 },
      (error, stdout) =>
        resolve({ code: error ? Number((error as { code?: unknown }).code) : 0, output: stdout }),
    );
    // Typed once the question is on the terminal: a pty discards what comes before the program reads it.
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('[y/N]')) child.stdin?.write(`${answer}\n`);
    });
  });
}

describe('warren namespace remove', () => {
  afterEach(async () => {
    await removeWatched();
    for (const client of opened.splice(0)) await client.close().catch(() => undefined);
    await cleanup();
  });
  after(() => workers.killAll());

  it('asks on a terminal, refuses without one, refuses while a process runs, and removes with --yes --force', async () => {
    const a = testNamespace('rmcli');
    watched.add(a);
    const cwd = removalConfigDir(a);
    const [worker] = await forkReady(a, 1);
    // the history's index streams too: the worker declares them at its first background indexing round
    await waitFor(
      async () => {
        const names = await brokerNames();
        return names.has(`queue ${a}.warren.leader`) && names.has(`queue ${a}.warren.history.checkpoints`);
      },
      { timeoutMs: 20_000, what: 'the namespace declared' },
    );
    const declared = within(await brokerNames(), a);

    const noTerminal = await runCli(['namespace', 'remove'], { cwd });
    assert.equal(noTerminal.code, 1, noTerminal.stderr);
    assert.match(noTerminal.stderr, /refusing to remove namespace .* without --yes.*\[CLI_NOT_CONFIRMED\]/);

    const declined = await runCliOnTerminal(['namespace', 'remove'], cwd, 'n');
    assert.match(declined.output, new RegExp(`Remove namespace '${a}' from the broker.*\\[y/N\\]`));
    assert.match(declined.output, /cancelled/);
    assert.notEqual(declined.code, 0);
    assert.deepEqual(within(await brokerNames(), a), declared, 'nothing deleted');

    const inUse = await runCliOnTerminal(['namespace', 'remove'], cwd, 'y');
    assert.match(
      inUse.output,
      new RegExp(`in use by 1 other process\\(es\\) \\([^)]*:${worker!.pid}\\).*\\[NAMESPACE_IN_USE\\]`),
    );
    assert.equal(inUse.code, 1);
    assert.deepEqual(within(await brokerNames(), a), declared, 'nothing deleted');

    const removed = await runCli(['namespace', 'remove', '--yes', '--force', '--wait', '30000', '--json'], {
      cwd,
    });
    assert.equal(removed.code, 0, removed.stderr);
    const result = JSON.parse(removed.stdout) as {
      namespace: string;
      stopped: { pid: number }[];
      queues: string[];
    };
    assert.equal(result.namespace, a);
    assert.deepEqual(
      result.stopped.map((p) => p.pid),
      [worker!.pid],
    );
    assert.ok(result.queues.includes(`${a}.warren.dead-log`));
    assert.deepEqual(within(await brokerNames(), a), []);
    failsWith(
      await runCli(['namespace', 'remove', '--wait', 'soon', '--yes'], { cwd }),
      /--wait must be a whole number.*\[CLI_USAGE\]/,
    );
  });
});
