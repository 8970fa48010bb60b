import { CONTENDER_NAMES, ContenderName, DEFAULT_CONTENDERS } from '../adapters';

export interface Sizes {
  rounds: number;
  serialPublishes: number;
  serialWarmup: number;
  concurrentPublishes: number;
  concurrentCallers: number;
  concurrentWarmup: number;
  bulkPublishes: number;
  consumeJobs: number;
  /**
   * Concurrency 1 runs at one broker round trip a job: fewer jobs give as steady a rate, and the suite its
   * time budget.
   */
  consumeJobsAtConcurrency1: number;
  /** Consumed before the clock starts, so consumer start-up and JIT warm-up are not timed. */
  consumeWarmup: number;
  e2eRatePerSec: number;
  e2eSeconds: number;
  e2eWarmupSeconds: number;
  e2eConcurrency: number;
  delayJobs: number;
  /** Delays are whole 100 ms steps from 100 ms to this. */
  delayMaxMs: number;
  /** Scenario 6's single delayed jobs: delay and number of samples of each group. */
  singleDelays: SingleDelayGroup[];
  /** Scenario 8: jobs in the chain of follow-up publishes (the first 20 hops are warm-up). */
  followUpJobs: number;
  retryJobs: number;
  retryConcurrency: number;
  memoryJobs: number;
  /** The memory scenario's rounds: a bound measured once, not a ratio needing a median. */
  memoryRounds: number;
  memoryConcurrency: number;
  /** A run that takes longer fails (and is cleaned up) rather than stalling an unattended suite. */
  runTimeoutMs: number;
}

export interface SingleDelayGroup {
  delayMs: number;
  samples: number;
}

export const FULL: Sizes = {
  rounds: 3,
  serialPublishes: 2_000,
  serialWarmup: 200,
  concurrentPublishes: 20_000,
  concurrentCallers: 100,
  concurrentWarmup: 1_000,
  bulkPublishes: 20_000,
  consumeJobs: 50_000,
  consumeJobsAtConcurrency1: 10_000,
  consumeWarmup: 1_000,
  e2eRatePerSec: 1_000,
  e2eSeconds: 10,
  e2eWarmupSeconds: 1,
  e2eConcurrency: 10,
  delayJobs: 500,
  delayMaxMs: 5_000,
  singleDelays: [
    { delayMs: 100, samples: 20 },
    { delayMs: 1_000, samples: 20 },
    { delayMs: 10_000, samples: 20 },
    { delayMs: 60_000, samples: 5 },
  ],
  followUpJobs: 320,
  retryJobs: 10_000,
  retryConcurrency: 100,
  memoryJobs: 1_000_000,
  memoryRounds: 1,
  memoryConcurrency: 100,
  runTimeoutMs: 240_000,
};

export const QUICK: Sizes = {
  ...FULL,
  rounds: 1,
  serialPublishes: 300,
  serialWarmup: 50,
  concurrentPublishes: 3_000,
  concurrentWarmup: 300,
  bulkPublishes: 5_000,
  consumeJobs: 5_000,
  consumeJobsAtConcurrency1: 5_000,
  consumeWarmup: 200,
  e2eSeconds: 3,
  e2eWarmupSeconds: 0.5,
  delayJobs: 200,
  delayMaxMs: 2_000,
  singleDelays: [
    { delayMs: 100, samples: 5 },
    { delayMs: 1_000, samples: 5 },
  ],
  followUpJobs: 120,
  retryJobs: 2_000,
  memoryJobs: 50_000,
  runTimeoutMs: 60_000,
};

export interface Options {
  quick: boolean;
  /** Scenario numbers; empty means all. */
  only: number[];
  contenders: ContenderName[];
  sizes: Sizes;
}

export const USAGE = `usage: npm run bench -- contenders [--quick] [--only=1,2,4] [--contenders=${CONTENDER_NAMES.join(',')}] [--rounds=N] [--memory-jobs=N] [--delay-max-ms=N] [--single-delay-max-ms=N]`;

export function parseOptions(argv: string[]): Options {
  let quick = false;
  let only: number[] = [];
  let contenders: ContenderName[] = [...DEFAULT_CONTENDERS];
  let rounds: number | undefined;
  let memoryJobs: number | undefined;
  let delayMaxMs: number | undefined;
  let singleDelayMaxMs: number | undefined;
  for (const arg of argv) {
    const [flag, value = ''] = arg.split('=', 2);
    if (flag === '--quick') quick = true;
    else if (flag === '--only') only = value.split(',').filter(Boolean).map(Number);
    else if (flag === '--contenders') contenders = value.split(',').filter(Boolean).map(parseContender);
    else if (flag === '--rounds') rounds = Number(value);
    else if (flag === '--memory-jobs') memoryJobs = Number(value);
    else if (flag === '--delay-max-ms') delayMaxMs = Number(value);
    else if (flag === '--single-delay-max-ms') singleDelayMaxMs = Number(value);
    else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  if (only.some((n) => !Number.isInteger(n))) throw new Error(`--only takes scenario numbers\n${USAGE}`);
  for (const [flag, n] of [
    ['--rounds', rounds],
    ['--memory-jobs', memoryJobs],
    ['--delay-max-ms', delayMaxMs],
    ['--single-delay-max-ms', singleDelayMaxMs],
  ] as const) {
    if (n !== undefined && !(Number.isInteger(n) && n > 0))
      throw new Error(`${flag} takes a positive integer`);
  }
  if (delayMaxMs !== undefined && delayMaxMs % 100 !== 0)
    throw new Error('--delay-max-ms takes a multiple of 100');
  const base = quick ? QUICK : FULL;
  const sizes = {
    ...base,
    rounds: rounds ?? base.rounds,
    memoryJobs: memoryJobs ?? base.memoryJobs,
    delayMaxMs: delayMaxMs ?? base.delayMaxMs,
    singleDelays: base.singleDelays.filter((g) => g.delayMs <= (singleDelayMaxMs ?? Infinity)),
  };
  if (sizes.singleDelays.length === 0) throw new Error('--single-delay-max-ms leaves no delay group');
  return { quick, only, contenders, sizes };
}

function parseContender(name: string): ContenderName {
  const known = CONTENDER_NAMES.find((n) => n === name);
  if (!known) throw new Error(`unknown contender ${name}; known: ${CONTENDER_NAMES.join(', ')}`);
  return known;
}
