/**
 * Cron leader failover time: three cron-worker processes (test/fixtures/cron-worker) on one
 * namespace; the leader is SIGKILLed (process death: the kernel closes its socket) or SIGSTOPped
 * (a frozen process: only heartbeats tell), and we time how long until another process reports
 * `leadershipChanged { isLeader: true }`. Build first (`npm run build`), then:
 *
 *   npm run bench -- leader-failover [rounds=5] [heartbeatSeconds=2]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createWarren } from '../../src';
import { cronTopology, Tick, type CronWorkerMessage } from '../../test/fixtures/cron-worker';
import { testProfile } from '../../test/support/test-broker';

interface Child {
  readonly process: ChildProcess;
  isLeader: boolean;
  leaderSince: number;
  ready: boolean;
}

const rounds = Number(process.argv[2] ?? 5);
const heartbeatSeconds = Number(process.argv[3] ?? 2);
const namespace = `bench-failover-${randomBytes(4).toString('hex')}`;
const children: Child[] = [];

function spawn(): Child {
  const script = join(__dirname, '..', '..', 'test', 'fixtures', 'cron-worker.js');
  const child: Child = {
    process: fork(script, [namespace, 'skip', String(heartbeatSeconds)], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    }),
    isLeader: false,
    leaderSince: 0,
    ready: false,
  };
  child.process.on('message', (message: CronWorkerMessage) => {
    if (message.kind === 'ready') child.ready = true;
    if (message.kind === 'leadership') {
      child.isLeader = message.isLeader;
      if (message.isLeader) child.leaderSince = message.at;
    }
  });
  children.push(child);
  return child;
}

async function until<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const live = () =>
  children.filter((c) => c.process.exitCode === null && c.process.signalCode === null && !c.process.killed);

async function round(signal: 'SIGKILL' | 'SIGSTOP'): Promise<number> {
  while (live().length < 3) spawn();
  await until(() => (live().every((c) => c.ready) ? true : undefined), 30_000, 'three ready workers');
  const leader = await until(() => live().find((c) => c.isLeader), 30_000, 'a leader');
  const others = live().filter((c) => c !== leader);
  const signalledAt = Date.now();
  leader.process.kill(signal);
  const next = await until(
    () => others.find((c) => c.isLeader),
    heartbeatSeconds * 10_000,
    'the next leader',
  );
  const failoverMs = next.leaderSince - signalledAt;
  if (signal === 'SIGSTOP') leader.process.kill('SIGCONT');
  leader.process.kill('SIGKILL');
  children.splice(children.indexOf(leader), 1);
  return failoverMs;
}

function summary(label: string, values: readonly number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return `| ${label} | ${values.length} | ${sorted[0]} | ${median} | ${sorted.at(-1)} | ${values.join(', ')} |`;
}

async function main(): Promise<void> {
  // Declares the namespace's queues (the class carries @Cron); never started, so it never leads. Deletes them
  // at the end.
  const declarer = await createWarren({ ...testProfile(namespace), topology: cronTopology, jobs: [Tick] });
  try {
    const killed: number[] = [];
    const stopped: number[] = [];
    for (let i = 0; i < rounds; i++) killed.push(await round('SIGKILL'));
    for (let i = 0; i < Math.max(1, Math.ceil(rounds / 2)); i++) stopped.push(await round('SIGSTOP'));
    console.log(
      `cron leader failover, 3 processes, heartbeat ${heartbeatSeconds} s (ms from the signal to the next leader's leadershipChanged)\n`,
    );
    console.log('| leader removed by | rounds | min | median | max | all |');
    console.log('| --- | --- | --- | --- | --- | --- |');
    console.log(summary('SIGKILL (process death)', killed));
    console.log(summary(`SIGSTOP (frozen process)`, stopped));
  } finally {
    for (const child of children) {
      child.process.kill('SIGCONT');
      child.process.kill('SIGKILL');
    }
    await declarer.deleteTopology().catch(() => undefined);
    await declarer.close();
  }
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export async function run(): Promise<void> {
  try {
    await main();
  } catch (error) {
    for (const child of children) child.process.kill('SIGKILL');
    throw error;
  }
  // the cron-worker children and the declarer's timers would keep the process alive
  process.exit(0);
}
