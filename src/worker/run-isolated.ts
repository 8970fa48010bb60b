import type { JobContext, Logger } from '../core';
import type { IsolatePool } from './isolate-pool';
import { rebuildError } from './isolate-outcomes';
import { crossError, type FromIsolate, type IsolateJobInfo, type ToIsolate } from './isolate-protocol';
import type { RunningJob } from './run-handler';

/**
 * Runs one job in its pool's isolate with the main-process `ctx` as the far end of the isolate's: progress
 * and log lines go to it, `ctx.publish` is published from here (confirmed as any publish), and a breaker
 * call is fired through the main process's breaker, the call itself running in the isolate when the breaker
 * lets it through (so the breaker counts the call's real outcome and an open breaker refuses it).
 */
export function runIsolated(
  pool: IsolatePool,
  run: {
    readonly data: unknown;
    readonly job: Omit<IsolateJobInfo, 'openBreakers'>;
    /** The job's declared breakers: which are open is sent along. */
    readonly breakers: readonly string[];
  },
  ctx: JobContext,
): RunningJob {
  const { data, job, breakers } = run;
  const openBreakers = breakers.filter((name) => ctx.breaker(name).isOpen);
  const breakerCalls = new Map<number, { resolve(): void; reject(error: Error): void }>();
  return pool.run({
    data,
    job: { ...job, openBreakers },
    onMessage: (message, reply) => answer(message, reply, ctx, breakerCalls),
  });
}

function answer(
  message: FromIsolate,
  reply: (message: ToIsolate) => void,
  ctx: JobContext,
  breakerCalls: Map<number, { resolve(): void; reject(error: Error): void }>,
): void {
  switch (message.t) {
    case 'progress':
      ctx.progress(message.value);
      return;
    case 'log':
      (ctx.log as Logger)[message.level](message.fields, message.msg);
      return;
    case 'settle': {
      const pending = breakerCalls.get(message.callId);
      breakerCalls.delete(message.callId);
      if (message.error === undefined) pending?.resolve();
      else pending?.reject(rebuildError(message.error));
      return;
    }
    case 'call': {
      const { id, callId } = message;
      const done = (settled: Promise<unknown>) =>
        settled.then(
          (value) => reply({ t: 'reply', id, callId, ok: true, value }),
          (error: unknown) => reply({ t: 'reply', id, callId, ok: false, error: crossError(error) }),
        );
      if (message.op === 'publish') {
        const [name, data, options] = message.args as Parameters<JobContext['publish']>;
        void done(Promise.resolve().then(() => ctx.publish(name, data, options)));
        return;
      }
      // the breaker runs a stand-in that lets the isolate make the call and settles as the call did
      const fired = ctx.breaker(message.name).fire(
        () =>
          new Promise<void>((resolve, reject) => {
            breakerCalls.set(callId, { resolve, reject });
            reply({ t: 'go', id, callId });
          }),
      );
      void done(fired.then(() => undefined));
      return;
    }
    default:
      return;
  }
}
