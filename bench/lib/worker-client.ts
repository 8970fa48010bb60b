import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { MemoryReading, StartCommand, WorkerReport } from './worker-protocol';

type DoneReport = Extract<WorkerReport, { type: 'done' }>;

export interface WorkerHandle {
  pid: number;
  /** Memory once the consumer is attached and before any job arrives. */
  memoryBefore: MemoryReading;
  done: Promise<DoneReport>;
  /** With `sampleMemory`: the readings so far, one every tenth of the expected jobs. */
  samples: MemoryReading[];
  close(): Promise<void>;
}

const live = new Set<ChildProcess>();

/** For the runner's emergency exit path. */
export function killAllWorkers(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** Forks dist/bench/lib/worker-process.js and resolves once its consumer is attached. */
export function startWorker(command: Omit<StartCommand, 'type'>): Promise<WorkerHandle> {
  const child = fork(join(__dirname, 'worker-process.js'), [], {
    execArgv: ['--expose-gc'],
    serialization: 'advanced', // so the latency Float64Array crosses IPC without JSON
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));

  let resolveDone!: (report: DoneReport) => void;
  let rejectDone!: (err: Error) => void;
  const done = new Promise<DoneReport>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => undefined); // observed by the caller once it awaits `done`
  const samples: MemoryReading[] = [];

  const close = async () => {
    if (child.exitCode === null && child.connected) child.send({ type: 'stop' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };

  return new Promise<WorkerHandle>((resolve, reject) => {
    child.on('message', (report: WorkerReport) => {
      if (report.type === 'ready')
        resolve({ pid: child.pid ?? -1, memoryBefore: report.memory, done, samples, close });
      else if (report.type === 'sample') samples.push(report.memory);
      else if (report.type === 'done') resolveDone(report);
      else {
        const err = new Error(report.message);
        reject(err);
        rejectDone(err);
      }
    });
    void exited.then(() => {
      const err = new Error(`worker process exited (code ${child.exitCode}) before finishing`);
      reject(err);
      rejectDone(err);
    });
    child.send({ type: 'start', ...command });
  });
}
