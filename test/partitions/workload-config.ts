/** What the partition harness tells each workload process (client.ts), and the delay levels both use. */

export interface ClientConfig {
  readonly name: string;
  /** the node of this side first, then the others */
  readonly urls: readonly string[];
  readonly namespace: string;
  /** PostgreSQL through its Unix socket folder (reachable from any network namespace) */
  readonly pg: { readonly host: string; readonly database: string; readonly user: string };
  readonly idempotencyTable: string;
  readonly outboxTable: string;
  /** publishes started per second (0: a worker that does not publish) */
  readonly ratePerSec: number;
  readonly maxInFlight: number;
  readonly publishTimeoutMs: number;
  readonly seed: number;
}

/** Delay levels of 100 ms units up to 51 s: the delayed jobs (up to 16 s) and the retries' backoff. */
export const PARTITION_DELAY = { queueType: 'quorum', levels: 9, unitMs: 100 } as const;
