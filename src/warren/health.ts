import type { BrokerVersion, ConnectionManager } from '../connection';
import type { LookupServer } from '../history';
import type { RecordSkips, RecordTrust } from '../records';
import type { ConsumerHealth, Worker } from '../worker';

export interface HealthReport {
  readonly connected: boolean;
  readonly blocked: boolean;
  /**
   * The broker of the current (or last) connection as it reported itself at connect, and the features
   * warren derives from its version (docs/reference/supported-versions.md); undefined before the first connect.
   */
  readonly broker: BrokerVersion | undefined;
  readonly consumers: readonly ConsumerHealth[];
  /** Connected, and every started queue consumer (not paused) is subscribed. */
  readonly healthy: boolean;
  /**
   * Records of warren's own streams and control messages this process skipped (forged, replayed,
   * unsigned while a key is set, malformed, out of bounds), per stream and reason: a count that grows is
   * someone writing where only warren should (docs/reference/trust.md).
   */
  readonly records: RecordSkips;
  /**
   * With `history.serveLookups` (docs/operating/cli.md#a-lookup-server): whether it has read the whole
   * history once (`ready`), the lookups it answered with their records, those it sent back to read the
   * streams (still reading the history, its marker late, a request it cannot trust), and the history
   * batches its index holds. Undefined otherwise.
   */
  readonly lookupServer?: {
    readonly ready: boolean;
    readonly answered: number;
    readonly declined: number;
    readonly batches: number;
  };
}

/** A warren's health now, from its connection and its worker's consumers. */
export function reportHealth(
  manager: ConnectionManager,
  worker: Worker,
  trust: RecordTrust,
  lookupServer?: LookupServer,
): HealthReport {
  const consumers = worker.health();
  const connected = manager.isConnected;
  const healthy = connected && (!worker.isStarted || consumers.every((c) => c.paused || c.consuming));
  return {
    connected,
    blocked: manager.isBlocked,
    broker: manager.broker,
    consumers,
    healthy,
    records: trust.skipped(),
    ...(lookupServer === undefined ? {} : { lookupServer: lookupServer.counts() }),
  };
}
