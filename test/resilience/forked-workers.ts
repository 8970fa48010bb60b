/**
 * Worker processes for the fault suite (dist/test/fixtures/fault-worker.js), forked with their stdout
 * piped: each JSON line they print is a {@link BatchWorkEvent} (a WorkEvent, or a batch a batch worker starts)
 * `killAll()` in an `after` hook SIGKILLs whatever is still alive, whatever the test did.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { BatchWorkEvent } from '../fixtures/batch-fault-jobs';
import type { WorkEvent } from '../fixtures/fault-jobs';

export interface ForkedWorkerOptions {
  readonly urls: readonly string[];
  readonly namespace: string;
  readonly concurrency: number;
  readonly graceMs?: number;
  /** The worker script under dist/test/fixtures; default `fault-worker.js`. */
  readonly script?: string;
  /** More environment for the worker (`FAULT_FAIR: '1'`: the fair-share queue; `FAULT_JOB: 'batch'`). */
  readonly env?: Readonly<Record<string, string>>;
}

/** One worker process, what it started and finished, and how it ended. */
export class ForkedWorker<E extends BatchWorkEvent = WorkEvent> {
  readonly pid: number;
  readonly started = new Set<string>();
  /** Finished job ids, with when the test saw the `done` line. */
  readonly done = new Map<string, number>();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private isReady = false;

  constructor(
    readonly child: ChildProcess,
    onEvent: (event: E, worker: ForkedWorker<E>) => void,
  ) {
    this.pid = child.pid!;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let event: E;
      try {
        event = JSON.parse(line) as E;
      } catch {
        process.stdout.write(`[worker ${this.pid}] ${line}\n`);
        return;
      }
      const seen = event as BatchWorkEvent;
      if (seen.event === 'ready') this.isReady = true;
      else if (seen.event === 'start') this.started.add(seen.id);
      else if (seen.event === 'done') this.done.set(seen.id, Date.now());
      onEvent(event, this);
    });
  }

  get ready(): boolean {
    return this.isReady;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Jobs it started and did not finish (running when it died or was stopped). */
  unfinished(): string[] {
    return [...this.started].filter((id) => !this.done.has(id));
  }
}

const everyChild = new Set<ChildProcess>();

// Never leave worker processes behind, even when the test process dies on an uncaught error.
process.on('exit', () => {
  for (const child of everyChild)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

export class ForkedWorkers<E extends BatchWorkEvent = WorkEvent> {
  private readonly workers: ForkedWorker<E>[] = [];

  constructor(private readonly onEvent: (event: E, worker: ForkedWorker<E>) => void) {}

  fork(options: ForkedWorkerOptions): ForkedWorker<E> {
    const child = fork(join(__dirname, '..', 'fixtures', options.script ?? 'fault-worker.js'), [], {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      env: {
        ...process.env,
        FAULT_URL: options.urls.join(','),
        FAULT_NAMESPACE: options.namespace,
        FAULT_CONCURRENCY: String(options.concurrency),
        FAULT_GRACE_MS: String(options.graceMs ?? 2000),
        ...options.env,
      },
    });
    everyChild.add(child);
    const worker = new ForkedWorker<E>(child, this.onEvent);
    this.workers.push(worker);
    return worker;
  }

  get all(): readonly ForkedWorker<E>[] {
    return this.workers;
  }

  /** SIGKILLs every worker still running and waits for them to exit. */
  async killAll(): Promise<void> {
    const alive = this.workers.splice(0).filter((w) => w.alive);
    for (const worker of alive) worker.child.kill('SIGKILL');
    await Promise.all(alive.map((w) => w.exited));
  }
}
