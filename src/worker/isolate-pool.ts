// size-exception: one state machine, so that every way an isolate ends (exit, kill, crash, recycle, reap) settles its run in one place; ~350.
import { IsolateError, JobTimeoutError, type Logger } from '../core';
import { describeExit, endError, rebuildError } from './isolate-outcomes';
import { spawnIsolate, type IsolateExit, type IsolateHandle } from './isolate-handle';
import { crossError, type FromIsolate, type IsolateJobInfo, type ToIsolate } from './isolate-protocol';
import type { IsolateSettings } from './isolate-settings';
import type { RunOutcome } from './run-handler';

/** One job handed to the pool: its payload and ctx fields, and where the isolate's calls go. */
export interface IsolateTask {
  readonly data: unknown;
  readonly job: IsolateJobInfo;
  /** A progress, log, call or settle message of this job; `reply` answers it. */
  readonly onMessage: (message: FromIsolate, reply: (message: ToIsolate) => void) => void;
}

/** A job in the pool: its outcome (exactly one), and the shutdown's kill. */
export interface IsolateRun {
  readonly outcome: Promise<RunOutcome>;
  /** Shutdown past its grace: kills the isolate running it (or drops it from the queue); outcome `aborted`. */
  abortForShutdown(): void;
  /** When it began in an isolate (`performance.now()`), 0 while queued: what its hard timeout counts from. */
  readonly startedAt: number;
}

const MIB = 1024 * 1024;
/** How often a busy process's RSS is read against `memoryLimitMb`. */
const MEMORY_POLL_MS = 20;

interface Member {
  readonly handle: IsolateHandle;
  isReady: boolean;
  busy: PendingRun | undefined;
  jobsRun: number;
  /** Why the pool killed it, if it did: the busy run's outcome. */
  killedFor: IsolateError['reason'] | 'shutdown' | 'retired' | undefined;
  idleTimer: NodeJS.Timeout | undefined;
}

interface PendingRun {
  readonly id: number;
  readonly task: IsolateTask;
  readonly settle: (outcome: RunOutcome) => void;
  member: Member | undefined;
  timers: NodeJS.Timeout[];
  isDone: boolean;
  startedAt: number;
}

/**
 * The isolates of one job (issue 34): at most `size` threads or child processes, each running one job at a
 * time; `warm` kept started, others stopped after `idleMs` idle; an isolate replaced after `recycleAfter`.
 * Written here rather than on Piscina or Tinypool: neither covers child processes and threads with one
 * outcome per task for every way an isolate ends (a hard kill of a busy worker, a process's RSS read
 * while the job runs, an external SIGKILL), nor lets a task's own messages (ctx calls) share the channel.
 *
 * Every run ends with exactly one outcome: the handler's result or error; `hard-timeout`, `memory-limit`,
 * `isolate-crashed` or `unserializable` as an IsolateError; or `aborted` on shutdown. An outcome of an
 * isolate's end is given only once it has exited, so a retry never overlaps a run still going.
 */
export class IsolatePool {
  private readonly members = new Set<Member>();
  private readonly queue: PendingRun[] = [];
  private nextId = 0;
  private isClosed = false;
  /** A spawn failed before its isolate was ready: no isolate is started again but for a job. */
  private isLoadBroken = false;

  constructor(
    readonly jobName: string,
    readonly settings: IsolateSettings,
    private readonly log: Logger,
  ) {}

  /** Isolates started (busy or idle). */
  get size(): number {
    return this.members.size;
  }

  /**
   * Starts the warm isolates (at least one, even with `warm: 0`: that the processor loads is checked
   * here) and waits until they are ready. A processor that does not load throws an IsolateError
   * (`ISOLATE_LOAD_FAILED`) naming the module and the cause.
   */
  async start(): Promise<void> {
    const count = Math.max(1, this.settings.warm);
    await Promise.all(Array.from({ length: count }, () => this.spawnReady()));
  }

  run(task: IsolateTask): IsolateRun {
    let settle!: (outcome: RunOutcome) => void;
    const outcome = new Promise<RunOutcome>((resolve) => {
      settle = resolve;
    });
    const pending: PendingRun = {
      id: ++this.nextId,
      task,
      settle: (o) => {
        if (pending.isDone) return;
        pending.isDone = true;
        for (const timer of pending.timers) clearTimeout(timer);
        settle(o);
      },
      member: undefined,
      timers: [],
      isDone: false,
      startedAt: 0,
    };
    if (this.isClosed) pending.settle({ kind: 'aborted' });
    else {
      this.queue.push(pending);
      this.dispatch();
    }
    return {
      outcome,
      get startedAt() {
        return pending.startedAt;
      },
      abortForShutdown: () => {
        if (pending.isDone) return;
        const member = pending.member;
        if (member === undefined) {
          this.queue.splice(this.queue.indexOf(pending), 1);
          pending.settle({ kind: 'aborted' });
          return;
        }
        this.kill(member, 'shutdown');
      },
    };
  }

  /** Kills every isolate. Called once the consumers stopped: no job runs any more (any left ends `aborted`). */
  async close(): Promise<void> {
    this.isClosed = true;
    for (const pending of this.queue.splice(0)) pending.settle({ kind: 'aborted' });
    const exits = [...this.members].map(
      (member) =>
        new Promise<void>((resolve) => {
          (member as Member & { onGone?: () => void }).onGone = resolve;
          this.kill(member, 'shutdown');
        }),
    );
    await Promise.all(exits);
  }

  private spawnReady(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.spawn((error) => (error === undefined ? resolve() : reject(error)));
    });
  }

  /** Starts an isolate; `ready` hears once whether it loaded. */
  private spawn(ready?: (error?: IsolateError) => void): Member {
    const { kind, processor, memoryLimitMb } = this.settings;
    let member!: Member;
    let loadError: IsolateError | undefined;
    const handle = spawnIsolate({
      kind,
      processor,
      jobName: this.jobName,
      heapLimitMb: kind === 'thread' ? memoryLimitMb : undefined,
      reportsMemory: this.settings.recycleMb !== undefined,
      onMessage: (message) => {
        if (message.t === 'ready') {
          member.isReady = true;
          this.isLoadBroken = false;
          ready?.();
          this.becameIdle(member);
          return;
        }
        if (message.t === 'load-failed') {
          loadError = new IsolateError(
            'load-failed',
            `the processor of job '${this.jobName}' (${processor}) did not load in its ${kind} isolate: ${message.error.message}`,
            { jobName: this.jobName, cause: message.error },
          );
          this.kill(member, 'retired');
          return;
        }
        const busy = member.busy;
        if (busy === undefined || message.id !== busy.id) return;
        if (message.t === 'done') this.finished(member, busy, message);
        else busy.task.onMessage(message, (reply) => this.sendTo(member, reply));
      },
      onExit: (exit) =>
        this.exited(member, exit, () => {
          if (member.isReady) return;
          this.isLoadBroken = true;
          ready?.(
            loadError ??
              new IsolateError(
                'load-failed',
                `the ${kind} isolate of job '${this.jobName}' ended before its processor (${processor}) loaded (${describeExit(exit)})`,
                { jobName: this.jobName, cause: exit.error },
              ),
          );
        }),
    });
    member = {
      handle,
      isReady: false,
      busy: undefined,
      jobsRun: 0,
      killedFor: undefined,
      idleTimer: undefined,
    };
    this.members.add(member);
    return member;
  }

  /** Hands queued jobs to idle isolates, starting isolates up to the pool's size. */
  private dispatch(): void {
    while (this.queue.length > 0) {
      const idle = this.idleMember();
      if (idle === undefined) {
        let starting = 0;
        for (const m of this.members) if (!m.isReady) starting += 1;
        if (this.members.size < this.settings.size && starting < this.queue.length) {
          this.spawn((error) => {
            // a processor that stopped loading fails the job that needed the isolate (an attempt), never
            // a spawn loop
            if (error !== undefined) this.queue.shift()?.settle({ kind: 'failed', error });
          });
          continue;
        }
        return;
      }
      this.begin(idle, this.queue.shift()!);
    }
  }

  private idleMember(): Member | undefined {
    for (const m of this.members)
      if (m.isReady && m.busy === undefined && m.killedFor === undefined) return m;
    return undefined;
  }

  private begin(member: Member, pending: PendingRun): void {
    clearTimeout(member.idleTimer);
    const { timeoutMs, hardTimeoutMs, memoryLimitMb, kind } = this.settings;
    try {
      if (!member.handle.send({ t: 'run', id: pending.id, data: pending.task.data, job: pending.task.job })) {
        // it died while idle and its exit is not heard yet: the job waits for another isolate
        this.queue.unshift(pending);
        this.kill(member, 'retired');
        return;
      }
    } catch (error) {
      pending.settle({
        kind: 'failed',
        error: new IsolateError(
          'unserializable',
          `the payload of job '${this.jobName}' cannot cross to its ${kind} isolate: ${(error as Error).message}`,
          { jobName: this.jobName, jobId: pending.task.job.jobId, cause: error },
        ),
      });
      this.becameIdle(member);
      return;
    }
    member.busy = pending;
    pending.member = member;
    pending.startedAt = performance.now();
    const job = pending.task.job;
    if (timeoutMs < hardTimeoutMs)
      pending.timers.push(
        setTimeout(() => {
          const error = new JobTimeoutError(timeoutMs, {
            jobName: job.name,
            jobId: job.jobId,
            queue: job.queue,
            attempt: job.attempt,
          });
          this.sendTo(member, { t: 'abort', id: pending.id, error: crossError(error) });
        }, timeoutMs),
      );
    pending.timers.push(setTimeout(() => this.kill(member, 'hard-timeout'), hardTimeoutMs));
    if (kind === 'process' && memoryLimitMb !== undefined) {
      const poll = setInterval(() => {
        const rss = member.handle.residentBytes();
        if (rss !== undefined && rss > memoryLimitMb * MIB) this.kill(member, 'memory-limit');
      }, MEMORY_POLL_MS);
      pending.timers.push(poll);
    }
  }

  private sendTo(member: Member, message: ToIsolate): void {
    try {
      member.handle.send(message);
    } catch (error) {
      this.log.debug({ err: error, job: this.jobName }, 'could not send to an isolate (it is gone)');
    }
  }

  private finished(member: Member, pending: PendingRun, done: Extract<FromIsolate, { t: 'done' }>): void {
    member.busy = undefined;
    member.jobsRun += 1;
    const job = pending.task.job;
    if (done.ok) pending.settle({ kind: 'completed', result: done.result });
    else if (done.unserializable)
      pending.settle({
        kind: 'failed',
        error: new IsolateError(
          'unserializable',
          `the result of job '${this.jobName}' cannot cross back from its isolate: ${done.error?.message}`,
          { jobName: job.name, jobId: job.jobId, queue: job.queue, attempt: job.attempt },
        ),
      });
    else
      pending.settle({
        kind: 'failed',
        error: rebuildError(done.error ?? { name: 'Error', message: 'failed' }),
      });
    const { recycleJobs, recycleMb } = this.settings;
    if (
      (recycleJobs !== undefined && member.jobsRun >= recycleJobs) ||
      (recycleMb !== undefined && (member.handle.residentBytes() ?? done.memoryBytes) > recycleMb * MIB)
    ) {
      this.kill(member, 'retired');
      return;
    }
    this.becameIdle(member);
  }

  private becameIdle(member: Member): void {
    if (member.killedFor !== undefined) return;
    clearTimeout(member.idleTimer);
    if (this.members.size > this.settings.warm) {
      member.idleTimer = setTimeout(() => {
        if (member.busy === undefined && this.members.size > this.settings.warm) this.kill(member, 'retired');
      }, this.settings.idleMs);
      member.idleTimer.unref();
    }
    this.dispatch();
  }

  private kill(member: Member, why: NonNullable<Member['killedFor']>): void {
    if (member.killedFor !== undefined) return;
    member.killedFor = why;
    clearTimeout(member.idleTimer);
    member.handle.kill();
  }

  /** Its end, once: the busy job's outcome, then a replacement if the warm minimum asks for one. */
  private exited(member: Member, exit: IsolateExit, beforeReady: () => void): void {
    this.members.delete(member);
    clearTimeout(member.idleTimer);
    beforeReady();
    (member as Member & { onGone?: () => void }).onGone?.();
    const pending = member.busy;
    member.busy = undefined;
    if (pending !== undefined) {
      const why = member.killedFor ?? (exit.outOfMemory ? 'memory-limit' : 'isolate-crashed');
      if (why === 'shutdown') pending.settle({ kind: 'aborted' });
      else
        pending.settle({
          kind: 'failed',
          error: endError(this, why === 'retired' ? 'isolate-crashed' : why, pending.task.job, exit),
        });
    }
    if (this.isClosed) return;
    if (member.killedFor === undefined)
      this.log.warn({ job: this.jobName, exit: describeExit(exit) }, 'an isolate ended on its own');
    // the replacement starts on the next turn: starting a thread or a process blocks for milliseconds,
    // and the settled delivery's ack or retry should not wait for it
    setImmediate(() => {
      if (this.isClosed) return;
      if (!this.isLoadBroken && this.members.size < this.settings.warm) this.spawn();
      this.dispatch();
    });
  }
}
