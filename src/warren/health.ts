import type { ConnectionManager } from '../connection';
import type { ConsumerHealth, Worker } from '../worker';

export interface HealthReport {
  readonly connected: boolean;
  readonly blocked: boolean;
  readonly consumers: readonly ConsumerHealth[];
  /** Connected, and every started queue consumer (not paused) is subscribed. */
  readonly healthy: boolean;
}

/** A warren's health now, from its connection and its worker's consumers. */
export function reportHealth(manager: ConnectionManager, worker: Worker): HealthReport {
  const consumers = worker.health();
  const connected = manager.isConnected;
  const healthy = connected && (!worker.isStarted || consumers.every((c) => c.paused || c.consuming));
  return { connected, blocked: manager.isBlocked, consumers, healthy };
}
