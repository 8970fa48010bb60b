import type { ContenderName } from '../adapters';
import type { Contender, ContenderEnv, ContenderFeatures } from '../adapters/contender';
import type { BrokerPids } from '../lib/broker-processes';
import type { CpuTimes } from '../lib/cpu';
import type { Sizes } from '../lib/options';

export interface MetricSpec {
  key: string;
  label: string;
  digits: number;
  /** A figure whose ratio to the baseline means nothing (a difference, a ratio itself). */
  noRatio?: boolean;
}

export interface RunContext {
  /** Already set up on `queue`; the runner tears it down. */
  contender: Contender;
  contenderName: ContenderName;
  env: ContenderEnv;
  queue: string;
  brokers: BrokerPids;
  sizes: Sizes;
  /** The scenario's features, which `setup` had (a forked worker sets up with them too). */
  features: ContenderFeatures;
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
  /** Overrides the suite's rounds (a long run measured once). */
  rounds?: number;
  /** Handed to the contender's setup. */
  features?: ContenderFeatures;
  /**
   * Optional contender methods the scenario calls; a contender without them is skipped here (and only here).
   * An array entry is satisfied by any one of its methods.
   */
  requires?: (keyof Contender | (keyof Contender)[])[];
  /** Overrides the suite's run timeout. */
  timeoutMs?: number;
  run(ctx: RunContext): Promise<RunOutcome>;
}

export const JOBS_PER_SEC: MetricSpec = { key: 'jobsPerSec', label: 'jobs/s', digits: 0 };

/** A scenario measured again under other settings (a queue type, a backoff), as a variant of its own. */
export interface Variant {
  /** Appended to the key: `consume-c10` + `-classic`. */
  keySuffix: string;
  /** Appended to the title. */
  titleSuffix: string;
  features: ContenderFeatures;
}

export function variantOf(scenario: Scenario, variant: Variant): Scenario {
  return {
    ...scenario,
    key: `${scenario.key}${variant.keySuffix}`,
    title: `${scenario.title}${variant.titleSuffix}`,
    features: { ...scenario.features, ...variant.features },
  };
}
