import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { BreakerPauses, BreakerRegistry } from '../breaker';
import type { ConnectionManager } from '../connection';
import { ControlListener, type ProcessRunningJob, type ProcessStatus } from '../process-control';
import { WARREN_VERSION, type Logger } from '../core';
import type { RecordTrust } from '../records';
import type { ScheduleInfo } from '../scheduler';
import type { TopologyPlan } from '../topology';
import type { ConsumerHealth } from '../worker';

/** The parts of a warren instance its control listener reports on and acts through. */
export interface ControlDeps {
  readonly plan: TopologyPlan;
  readonly manager: ConnectionManager;
  readonly pauses: BreakerPauses;
  readonly breakers: () => BreakerRegistry;
  readonly consumers: () => readonly ConsumerHealth[];
  readonly isLeader: () => boolean;
  readonly schedules: () => readonly ScheduleInfo[];
  /** The jobs running now (with `aggregates` on); undefined: not listed. */
  readonly running: (() => readonly ProcessRunningJob[]) | undefined;
  readonly log: Logger;
  readonly trust: RecordTrust;
}

/** A warren's control listener and the process id it answers with. */
export interface WarrenControl {
  readonly listener: ControlListener;
  readonly processId: string;
  /** What the process does when an operator removes its namespace (the Warren closes itself). */
  onRemoval(close: () => void): void;
}

/**
 * Wires a warren instance to the control exchange: it answers warren/ops with its status and follows
 * the operator's pause markers (see src/process-control). Returns the listener, whose `open` is a
 * reconnect step (reconnect-steps.ts).
 */
export function createControl(deps: ControlDeps): WarrenControl {
  const processId = randomUUID();
  const startedAt = new Date().toISOString();
  const status = (): ProcessStatus => ({
    id: processId,
    host: hostname(),
    pid: process.pid,
    version: WARREN_VERSION,
    startedAt,
    connected: deps.manager.isConnected,
    queues: deps.consumers().map((consumer) => {
      const holders = deps.pauses.holdersOf(consumer.queue);
      return {
        key: consumer.queue,
        consuming: consumer.consuming,
        paused: holders.length > 0,
        holders,
        activeJobs: consumer.activeJobs,
        handled: consumer.handled,
        ...(consumer.fairness ? { fairness: consumer.fairness } : {}),
        ...(consumer.partitions
          ? { partitions: { owned: consumer.partitions.owned, members: consumer.partitions.members } }
          : {}),
        ...(consumer.partitions?.limits ? { keyLimits: consumer.partitions.limits } : {}),
      };
    }),
    breakers: deps.breakers().states(),
    isLeader: deps.isLeader(),
    schedules: deps.schedules().map((s) => ({
      id: s.id,
      job: s.job,
      pattern: s.pattern,
      tz: s.tz,
      nextFireAt: s.nextFireAt.toISOString(),
      ...(s.lastFiredAt ? { lastFiredAt: s.lastFiredAt.toISOString() } : {}),
    })),
    ...(deps.running ? { running: deps.running() } : {}),
  });
  let closeForRemoval: () => void = () => undefined;
  const listener = new ControlListener(
    deps.plan.naming,
    deps.manager,
    {
      status,
      queueKeys: () => deps.consumers().map((consumer) => consumer.queue),
      holdByOperator: (key, held) => deps.pauses.hold('operator', key, held),
      closeForRemoval: () => closeForRemoval(),
    },
    deps.log,
    deps.trust,
  );
  return {
    listener,
    processId,
    onRemoval: (close) => {
      closeForRemoval = close;
    },
  };
}
