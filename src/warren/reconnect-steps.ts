import type { ReadyStep } from '../connection';

/**
 * What a warren does after every (re)connect, in this order, before it emits `connected`: the one list
 * of its reconnect steps. docs/guide/connections.md lists the same order, and a unit test holds the two
 * together (test/unit/warren/reconnect-steps.test.ts). A step that fails stops the run and is logged
 * with its name; the connection is closed and tried again (src/connection/ready-steps.ts).
 */
export const RECONNECT_STEPS = [
  'topology',
  'history stream',
  'aggregates streams',
  'control listener',
  'job events',
  'confirm channel',
  'consumers',
  'cron',
  'dead-letter log',
] as const;

export type ReconnectStepName = (typeof RECONNECT_STEPS)[number];

interface OpensOn {
  open(generation: number): Promise<void>;
}

/** The parts a reconnect opens again, each by the one call its step makes. */
export interface ReconnectParts {
  /** Declares the plan (checking the broker's features first). */
  readonly reapplyTopology: () => Promise<void>;
  /** Opens the history writer (the topology step declared its stream); undefined when history is off. */
  readonly history: { open(): Promise<void> } | undefined;
  /** Opens the aggregates writer (the topology step declared its streams); undefined while they are off. */
  readonly aggregates: { open(): Promise<void> } | undefined;
  /** The control listener: an operator's pauses, read before any consumer opens. */
  readonly controlListener: OpensOn;
  /** The live job events: the relay's interest queue and hello, and every subscription again. */
  readonly jobEvents: { open(): Promise<void> };
  readonly confirms: OpensOn;
  /**
   * A channel per consumer (consuming again if started), the rate limiters' refill elections, the
   * job-control stream read ahead (in the background).
   */
  readonly worker: OpensOn;
  /** Catches up with the schedule registry, then rejoins the cron leader election. */
  readonly scheduling: OpensOn;
  /** Follows the parking queues into the dead-letter log; undefined when this process does not collect. */
  readonly deadLetterLog: { follow(): Promise<void> } | undefined;
}

/** The reconnect steps of a warren, in the order of {@link RECONNECT_STEPS}. */
export function reconnectSteps(parts: ReconnectParts): readonly ReadyStep[] {
  const runs: Record<ReconnectStepName, ReadyStep['run']> = {
    topology: () => parts.reapplyTopology(),
    'history stream': async () => parts.history?.open(),
    'aggregates streams': async () => parts.aggregates?.open(),
    // Before the consumers open: a queue an operator paused must not consume for a moment on (re)connect.
    'control listener': (_model, generation) => parts.controlListener.open(generation),
    // Before the consumers open: a subscriber's interest is heard before the first job runs.
    'job events': () => parts.jobEvents.open(),
    'confirm channel': (_model, generation) => parts.confirms.open(generation),
    consumers: (_model, generation) => parts.worker.open(generation),
    // After the confirm channel: a leader fires its ticks through it.
    cron: (_model, generation) => parts.scheduling.open(generation),
    'dead-letter log': async () => parts.deadLetterLog?.follow(),
  };
  return RECONNECT_STEPS.map((name) => ({ name, run: runs[name] }));
}
