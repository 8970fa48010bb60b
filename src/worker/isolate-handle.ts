import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { IsolateKind } from '../core';
import type { FromIsolate, ToIsolate } from './isolate-protocol';

/** How an isolate ended: its exit code or signal, and whether a thread hit its heap cap. */
export interface IsolateExit {
  readonly code: number | null;
  readonly signal: string | null;
  readonly outOfMemory: boolean;
  readonly error: Error | undefined;
}

/**
 * One thread or child process running isolate-entry, behind one interface: send a message (throws when
 * structured clone refuses it, sending nothing), kill it at once, read its memory, hear its messages and
 * its end (exactly once).
 */
export interface IsolateHandle {
  /** Throws when structured clone refuses the message (nothing sent); says false if the isolate is gone. */
  send(message: ToIsolate): boolean;
  /** Ends it now: `terminate()` for a thread (stops a busy loop), SIGKILL for a process. */
  kill(): void;
  /** A process's RSS read from /proc (Linux), bytes; undefined for a thread or where /proc is missing. */
  residentBytes(): number | undefined;
  readonly pid: number | undefined;
}

export interface IsolateSpawn {
  readonly kind: IsolateKind;
  /** The processor module, as import() takes it (an absolute path or a file URL). */
  readonly processor: string;
  readonly jobName: string;
  /** Whether it reports its memory after each job (`recycleAfter.rssMb`). */
  readonly reportsMemory: boolean;
  /** A thread's JS heap cap (resourceLimits), MiB. */
  readonly heapLimitMb: number | undefined;
  readonly onMessage: (message: FromIsolate) => void;
  readonly onExit: (exit: IsolateExit) => void;
}

const ENTRY = require.resolve('./isolate-entry');

export function spawnIsolate(spawn: IsolateSpawn): IsolateHandle {
  return spawn.kind === 'thread' ? spawnThread(spawn) : spawnProcess(spawn);
}

function spawnThread(spawn: IsolateSpawn): IsolateHandle {
  const worker = new Worker(ENTRY, {
    workerData: { processor: spawn.processor, jobName: spawn.jobName, reportsMemory: spawn.reportsMemory },
    ...(spawn.heapLimitMb !== undefined
      ? { resourceLimits: { maxOldGenerationSizeMb: spawn.heapLimitMb } }
      : {}),
  });
  let outOfMemory = false;
  let error: Error | undefined;
  worker.on('message', (m: FromIsolate) => spawn.onMessage(m));
  worker.on('error', (e: Error & { code?: string }) => {
    error = e;
    if (e.code === 'ERR_WORKER_OUT_OF_MEMORY') outOfMemory = true;
  });
  worker.on('exit', (code) => spawn.onExit({ code, signal: null, outOfMemory, error }));
  return {
    send: (m) => {
      worker.postMessage(m);
      return true;
    },
    kill: () => {
      void worker.terminate();
    },
    residentBytes: () => undefined,
    pid: undefined,
  };
}

function spawnProcess(spawn: IsolateSpawn): IsolateHandle {
  const child: ChildProcess = fork(ENTRY, [spawn.processor, spawn.jobName, spawn.reportsMemory ? '1' : '0'], {
    serialization: 'advanced',
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let ended = false;
  let error: Error | undefined;
  const end = (code: number | null, signal: string | null) => {
    if (ended) return;
    ended = true;
    spawn.onExit({ code, signal, outOfMemory: false, error });
  };
  child.on('message', (m) => spawn.onMessage(m as FromIsolate));
  child.on('error', (e) => {
    error = e;
    // a fork that failed to spawn never emits 'exit'
    if (child.pid === undefined) end(null, null);
  });
  child.on('exit', (code, signal) => end(code, signal));
  const statusFile = `/proc/${child.pid}/status`;
  return {
    send: (m) => {
      if (!child.connected) return false;
      child.send(m);
      return true;
    },
    kill: () => {
      child.kill('SIGKILL');
    },
    residentBytes: () => {
      try {
        const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(statusFile, 'latin1'));
        return match ? Number(match[1]) * 1024 : undefined;
      } catch {
        return undefined;
      }
    },
    pid: child.pid,
  };
}
