import type { WarrenEvents } from './events';

/**
 * The instrumentation contract: plain hooks the publisher and the worker call when (and only when) an
 * instrumentation is set, so metrics and traces (warren/observability) live outside the hot path and
 * need no dependency here. Hooks must not throw and must be cheap: they run once per job.
 */
export interface Instrumentation {
  /**
   * Called before a job is sent. May add headers (trace context) to `info.headers`. Returns a function
   * called once with the outcome (undefined: the broker confirmed), or nothing.
   */
  readonly publish?: (info: PublishInfo) => ((error: unknown) => void) | undefined;
  /** Called when a handler is about to run; the scope wraps the run and hears how it ended. */
  readonly process?: (info: ProcessInfo) => ProcessScope | undefined;
  /** Called once the warren instance exists: subscribe to its events, register scrape-time readers. */
  readonly attach?: (target: InstrumentationTarget) => void;
}

/** Who started a publish: user code (and handlers), or a cron firing (which starts its own trace). */
export type PublishOrigin = 'user' | 'cron';

export interface PublishInfo {
  readonly name: string;
  readonly jobId: string;
  /** Topology key of the job's queue. */
  readonly queue: string;
  readonly exchange: string;
  readonly routingKey: string;
  readonly correlationId: string | undefined;
  /** Body size in bytes. */
  readonly bytes: number;
  /** 0 unless the job waits in the delay levels before it runs. */
  readonly delayMs: number;
  readonly origin: PublishOrigin;
  /** The message's header table; an instrumentation may add (never remove) entries. */
  readonly headers: Record<string, unknown>;
}

export interface ProcessInfo {
  readonly name: string;
  readonly jobId: string;
  /** Topology key of the queue. */
  readonly queue: string;
  /** Broker name of the queue. */
  readonly queueName: string;
  readonly exchange: string;
  readonly routingKey: string;
  readonly attempt: number;
  /** ms since epoch when the job was first published. */
  readonly enqueuedAt: number;
  readonly correlationId: string | undefined;
  readonly bytes: number;
  readonly headers: Readonly<Record<string, unknown>>;
  /**
   * A job of a queue with fairness: the lane it came from, a bounded label (`0` to `63`, `previous-<n>`
   * while the lane count changes, `intake` for the queue itself). Undefined on other queues.
   */
  readonly lane?: string;
}

/** How one handler run ended, as the scope hears it. */
export type ProcessOutcome =
  | { readonly kind: 'completed' }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'aborted' };

export interface ProcessScope {
  /** Runs the handler call inside the scope (a trace scope makes its span the active one). */
  run<T>(fn: () => T): T;
  /** Adds headers to a republish of this job (retry, delay, dead letter): the link to this attempt. */
  carry(headers: Record<string, unknown>): void;
  /** Called once, after the job was settled. */
  end(outcome: ProcessOutcome): void;
}

/** What an instrumentation may read from a warren instance: its events and what scrape-time gauges need. */
export interface InstrumentationTarget {
  on<K extends keyof WarrenEvents>(event: K, listener: (...args: WarrenEvents[K]) => void): unknown;
  /** Every job name of the topology plan (the bounded set of job label values). */
  readonly jobNames: readonly string[];
  /** The job queues: topology key, broker name, dead-letter queue name. */
  readonly queues: readonly { readonly key: string; readonly name: string; readonly deadName: string }[];
  /** Broker names of the shared delay-level queues. */
  readonly delayQueues: readonly string[];
  /** Messages ready in a queue, by a passive declare (rejects when the broker cannot tell). */
  messageCount(queueName: string): Promise<number>;
  isConnected(): boolean;
  isLeader(): boolean;
  /**
   * Per-key limits of the queues this process owns keys of (docs/guide/per-key-limits.md): deliveries waiting
   * aside for their key now, jobs re-delayed for their key since start, and the busiest keys (at most 10 a queue).
   */
  keyLimits?(): readonly KeyLimitsSample[];
}

/** One key's place among the busiest (metrics, health, the processes' reports). */
export interface BusyKey {
  readonly key: string;
  readonly running: number;
  /** Starts within the current window, over every rate limit of the key. */
  readonly recentStarts: number;
}

/** What a queue with per-key limits reports (docs/guide/per-key-limits.md): health, metrics, process reports. */
export interface KeyLimitStats {
  /** Deliveries waiting aside in this process because their key is at its limit. */
  readonly held: number;
  /** Jobs re-delayed (no attempt spent) because their key was at its limit and too many waited aside. */
  readonly deferred: number;
  /** The keys with the most jobs running here, then the most recent starts. */
  readonly busiestKeys: readonly BusyKey[];
}

/** One queue's per-key limits as metrics read them at scrape time. */
export interface KeyLimitsSample extends KeyLimitStats {
  readonly queue: string;
}

/** Several instrumentations as one: hooks run in order; a scope's run nests the later ones inside. */
export function combineInstrumentation(list: readonly Instrumentation[]): Instrumentation | undefined {
  if (list.length === 0) return undefined;
  if (list.length === 1) return list[0];
  const publishers = list.flatMap((i) => (i.publish ? [i.publish] : []));
  const processors = list.flatMap((i) => (i.process ? [i.process] : []));
  return {
    publish: (info) => {
      const ends = publishers.flatMap((publish) => publish(info) ?? []);
      return (error) => {
        for (const end of ends) end(error);
      };
    },
    process: (info) => {
      const scopes = processors.flatMap((process) => process(info) ?? []);
      return {
        run: (fn) => scopes.reduceRight<() => ReturnType<typeof fn>>((inner, s) => () => s.run(inner), fn)(),
        carry: (headers) => {
          for (const scope of scopes) scope.carry(headers);
        },
        end: (outcome) => {
          for (const scope of scopes) scope.end(outcome);
        },
      };
    },
    attach: (target) => {
      for (const i of list) i.attach?.(target);
    },
  };
}
