/**
 * The program an isolate runs (a worker thread's script, a child process's main module): it imports the
 * job's processor module, finds the handler of the job in it, answers `ready` (or `load-failed`), then
 * runs one job at a time as the pool sends them, with a ctx whose calls cross to the main process
 * (isolate-protocol.ts). It never touches the broker. It imports nothing of warren but the protocol and the loader, so
 * that an isolate starts in tens of milliseconds.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { loadHandler, type Handle } from './isolate-loader';
import {
  crossError,
  type CrossedError,
  type FromIsolate,
  type LogLevel,
  type ToIsolate,
} from './isolate-protocol';

interface Port {
  send(message: FromIsolate): void;
  onMessage(listener: (message: ToIsolate) => void): void;
}

function portOf(): Port {
  if (!isMainThread && parentPort) {
    const port = parentPort;
    return { send: (m) => port.postMessage(m), onMessage: (l) => port.on('message', l) };
  }
  return {
    send: (m) => {
      process.send?.(m);
    },
    onMessage: (l) => process.on('message', (m) => l(m as ToIsolate)),
  };
}

interface Settings {
  readonly processor: string;
  readonly jobName: string;
  /** Report the memory after each job (`recycleAfter.rssMb`): reading it costs more than a small job. */
  readonly reportsMemory: boolean;
}

function settingsOf(): Settings {
  if (!isMainThread) return workerData as Settings;
  return {
    processor: process.argv[2] ?? '',
    jobName: process.argv[3] ?? '',
    reportsMemory: process.argv[4] === '1',
  };
}

class Aborted extends Error {}

function errorFrom(crossed: CrossedError): Error {
  const error = new Error(crossed.message);
  error.name = crossed.name;
  if (crossed.stack !== undefined) error.stack = crossed.stack;
  if (crossed.code !== undefined) (error as { code?: string }).code = crossed.code;
  return error;
}

type Calls = Map<number, { resolve(v: unknown): void; reject(e: unknown): void; go?: () => void }>;

/** What one job's ctx inside the isolate is made of. */
interface JobSide {
  readonly port: Port;
  readonly id: number;
  /** Made when the handler first reads `ctx.signal` (an AbortController costs more than a small job). */
  controller: AbortController | undefined;
  abortReason: Error | undefined;
  readonly calls: Calls;
}

/** One job's ctx inside the isolate: the fields, and functions that cross to the main process. */
function makeContext(side: JobSide, job: Extract<ToIsolate, { t: 'run' }>['job']) {
  const { port, id } = side;
  let log: Record<string, unknown> | undefined;
  return {
    ...job,
    get signal(): AbortSignal {
      if (side.controller === undefined) {
        side.controller = new AbortController();
        if (side.abortReason !== undefined) side.controller.abort(side.abortReason);
      }
      return side.controller.signal;
    },
    get log() {
      log ??= isolateLogger(side, {});
      return log;
    },
    progress: (value: unknown) => port.send({ t: 'progress', id, value }),
    publish: (name: string, data: unknown, options?: unknown) =>
      callMain(side, (callId) => ({ t: 'call', id, callId, op: 'publish', args: [name, data, options] })),
    breaker: (name: string) => ({
      isOpen: job.openBreakers.includes(name),
      fire: <T>(fn: () => Promise<T>) => fireThroughMain(side, name, fn),
    }),
  };
}

let nextCall = 0;

/** Sends a call to the main process; its reply settles the promise. `go` runs when a breaker lets it through. */
function callMain(
  side: JobSide,
  message: (callId: number) => FromIsolate,
  go?: () => void,
): Promise<unknown> {
  return new Promise<unknown>((resolve, reject) => {
    const callId = ++nextCall;
    side.calls.set(callId, { resolve, reject, ...(go ? { go } : {}) });
    side.port.send(message(callId));
  });
}

/**
 * A breaker call: the main process fires its breaker, which (when closed) says `go`; the call runs here and
 * its outcome goes back for the breaker to count; then the main process answers with the breaker's verdict.
 */
function fireThroughMain<T>(side: JobSide, name: string, fn: () => Promise<T>): Promise<T> {
  let ran: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  let callId = 0;
  const go = () => {
    Promise.resolve()
      .then(fn)
      .then(
        (value) => {
          ran = { ok: true, value };
          side.port.send({ t: 'settle', id: side.id, callId, error: undefined });
        },
        (error: unknown) => {
          ran = { ok: false, error };
          side.port.send({ t: 'settle', id: side.id, callId, error: crossError(error) });
        },
      );
  };
  const message = (c: number): FromIsolate => {
    callId = c;
    return { t: 'call', id: side.id, callId: c, op: 'breaker', name };
  };
  return callMain(side, message, go).then(
    () => {
      if (ran?.ok) return ran.value;
      throw ran?.error ?? new Error(`breaker '${name}' answered without running the call`);
    },
    (error: unknown) => {
      if (ran !== undefined && !ran.ok) throw ran.error;
      throw error;
    },
  );
}

/** A pino-shaped logger whose lines go to the job's main-process `ctx.log`. */
function isolateLogger(side: JobSide, fields: Record<string, unknown>): Record<string, unknown> {
  const at =
    (level: LogLevel) =>
    (first?: unknown, msg?: string): void => {
      const own = typeof first === 'object' && first !== null ? cloneable(first) : {};
      const text = typeof first === 'string' ? first : msg;
      side.port.send({ t: 'log', id: side.id, level, fields: { ...fields, ...own }, msg: text });
    };
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    child: (more: Record<string, unknown>) => isolateLogger(side, { ...fields, ...more }),
  };
}

/** Log fields as they can cross: an Error becomes its crossed form, anything else unclonable is dropped. */
function cloneable(fields: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) out[key] = crossError(value);
    else if (typeof value !== 'function' && typeof value !== 'symbol') out[key] = value;
  }
  return out;
}

function memoryBytes(reportsMemory: boolean): number {
  if (!reportsMemory) return 0;
  return isMainThread ? process.memoryUsage.rss() : process.memoryUsage().heapUsed;
}

/** This isolate: its channel, its job's handler, and whether it reports its memory after each job. */
interface Host {
  readonly port: Port;
  readonly run: Handle;
  readonly reportsMemory: boolean;
}

function runJob(host: Host, message: Extract<ToIsolate, { t: 'run' }>, jobs: Map<number, JobSide>) {
  const { port, run, reportsMemory } = host;
  const side: JobSide = {
    port,
    id: message.id,
    controller: undefined,
    abortReason: undefined,
    calls: new Map(),
  };
  jobs.set(message.id, side);
  const ctx = makeContext(side, message.job);
  const finish = (done: Omit<Extract<FromIsolate, { t: 'done' }>, 't' | 'id' | 'memoryBytes'>) => {
    jobs.delete(message.id);
    const base = { t: 'done', id: message.id, memoryBytes: memoryBytes(reportsMemory) } as const;
    try {
      port.send({ ...base, ...done });
    } catch (error) {
      port.send({ ...base, ok: false, unserializable: true, error: crossError(error) });
    }
  };
  Promise.resolve()
    .then(() => run(message.data, ctx))
    .then(
      (result) => finish({ ok: true, result }),
      (error: unknown) => finish({ ok: false, error: crossError(error) }),
    );
}

/** The other messages of a running job: its signal's abort, a call's reply, a breaker's go. */
function toJob(side: JobSide, message: Exclude<ToIsolate, { t: 'run' }>): void {
  if (message.t === 'abort') {
    const reason = Object.assign(new Aborted(message.error.message), { name: message.error.name });
    side.abortReason = reason;
    side.controller?.abort(reason);
    return;
  }
  const pending = side.calls.get(message.callId);
  if (pending === undefined) return;
  if (message.t === 'go') {
    pending.go?.();
    return;
  }
  side.calls.delete(message.callId);
  if (message.ok) pending.resolve(message.value);
  else pending.reject(errorFrom(message.error ?? { name: 'Error', message: 'call failed' }));
}

async function main(): Promise<void> {
  const port = portOf();
  const settings = settingsOf();
  let run: Handle;
  try {
    run = await loadHandler(settings);
  } catch (error) {
    port.send({ t: 'load-failed', error: crossError(error) });
    return;
  }
  const jobs = new Map<number, JobSide>();
  const host: Host = { port, run, reportsMemory: settings.reportsMemory };
  port.onMessage((message) => {
    if (message.t === 'run') return runJob(host, message, jobs);
    const side = jobs.get(message.id);
    if (side !== undefined) toJob(side, message);
  });
  port.send({ t: 'ready' });
}

void main();
