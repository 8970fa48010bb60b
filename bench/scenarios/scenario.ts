import type { ContenderName } from '../adapters';
import type { Contender, ContenderEnv } from '../adapters/contender';
import type { BrokerPids } from '../broker-processes';
import type { CpuTimes } from '../cpu';
import type { Sizes } from '../options';

export interface MetricSpec {
  key: string;
  label: string;
  digits: number;
}

export interface RunContext {
  /** Already set up on `queue`; the runner tears it down. */
  contender: Contender;
  contenderName: ContenderName;
  env: ContenderEnv;
  queue: string;
  brokers: BrokerPids;
  sizes: Sizes;
}

export interface RunOutcome {
  metrics: Record<string, number>;
  cpu: CpuTimes;
  wallMs: number;
  /** Jobs in the timed part, for CPU-per-job figures. */
  jobs: number;
}

export interface Scenario {
  /** The scenario number of the brief; --only selects by it. */
  id: number;
  /** Unique per variant, e.g. `4-c10`. */
  key: string;
  title: string;
  /** The first one picks the median run whose CPU times are shown. */
  metrics: MetricSpec[];
  run(ctx: RunContext): Promise<RunOutcome>;
}

export const JOBS_PER_SEC: MetricSpec = { key: 'jobsPerSec', label: 'jobs/s', digits: 0 };
