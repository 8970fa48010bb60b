import type { ContenderEnv, ContenderFeatures } from '../adapters/contender';
import type { ContenderName } from '../adapters';

export interface StartCommand {
  type: 'start';
  contender: ContenderName;
  env: ContenderEnv;
  queue: string;
  /** What the parent's contender was set up with (the queue type, the exchange). */
  features?: ContenderFeatures;
  concurrency: number;
  /** The worker reports `done` once it has handled this many jobs. */
  expect: number;
  recordLatency: boolean;
  /** Report memory (after a forced GC) every tenth of `expect` jobs. */
  sampleMemory?: boolean;
}

export interface StopCommand {
  type: 'stop';
}

export interface MemoryReading {
  rssMb: number;
  /** Measured right after a forced GC, so it is what the worker retains. */
  heapUsedMb: number;
}

export type WorkerReport =
  | { type: 'ready'; memory: MemoryReading }
  /**
   * Every tenth of the expected jobs, with `sampleMemory`: shows whether memory keeps growing or has levelled
   * off.
   */
  | { type: 'sample'; handled: number; memory: MemoryReading }
  | {
      type: 'done';
      memory: MemoryReading;
      /** Highest RSS over the worker's life (getrusage). */
      maxRssMb: number;
      cpuMs: number;
      doneAtUs: number;
      /** Enqueue-to-handler-start per job, indexed by job seq. */
      latenciesUs?: Float64Array;
    }
  | { type: 'error'; message: string };
