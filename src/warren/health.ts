import type { BrokerVersion, ConnectionManager } from '../connection';
import type { ConsumerHealth, Worker } from '../worker';

export interface HealthReport {
  readonly connected: boolean;
  readonly blocked: boolean;
  /**
   * The broker of the current (or last) connection as it reported itself at connect, and the features
   * warren derives from its version (README, "Supported versions"); undefined before the first connect.
   */
  readonly broker: BrokerVersion | undefined;
  readonly consumers: readonly ConsumerHealth[];
  /** Connected, and every started queue consumer (not paused) is subscribed. */
  readonly healthy: boolean;
}

/** A warren's health now, from its connection and its worker's consumers. */
export function reportHealth(manager: ConnectionManager, worker: Worker): HealthReport {
  const consumers = worker.health();
  const connected = manager.isConnected;
  const healthy = connected && (!worker.isStarted || consumers.every((c) => c.paused || c.consuming));
  return { connected, blocked: manager.isBlocked, broker: manager.broker, consumers, healthy };
}
