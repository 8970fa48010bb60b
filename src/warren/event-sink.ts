import { EventEmitter } from 'node:events';
import {
  ConfigurationError,
  WARREN_EVENT_NAMES,
  type EmitEvent,
  type ListensTo,
  type Logger,
  type WarrenEvents,
} from '../core';
import type { EventRelay } from '../job-events';

/**
 * Where a warren's parts send their events. The parts are built before the Warren that users listen to
 * (it is built from them), so they emit here, and the sink forwards to the Warren once `connect`ed;
 * before that nobody can listen, and events go nowhere. A listener that throws is logged and ignored:
 * a listener's bug must not fail the job or the connection that emitted.
 */
export class WarrenEventSink {
  #target: EventEmitter<WarrenEvents> | undefined;
  #log: Logger | undefined;
  #relay: EventRelay | undefined;

  /** Events go to `relay` too: the live job events other processes subscribe to. */
  relayTo(relay: EventRelay): void {
    this.#relay = relay;
  }

  /** From now on, events go to `target`'s listeners; a listener that throws is logged on `log`. */
  connect(target: EventEmitter<WarrenEvents>, log: Logger): void {
    this.#target = target;
    this.#log = log;
  }

  readonly emit: EmitEvent = (event, ...args) => {
    if (this.#target !== undefined) emitToEach(this.#target as EventEmitter, event, args, this.#log);
    const relay = this.#relay;
    if (relay === undefined || !relay.wants(event)) return;
    // only an event of a job a subscriber's filter matches is built into a record and sent
    const job = args[0] as { jobId?: string; name?: string; queue?: string } | undefined;
    if (job?.jobId !== undefined && relay.wants(event, job.jobId, job.name, job.queue))
      relay.relay(event, args[0]);
  };

  /**
   * Whether anyone listens to `event` (here, or a subscriber elsewhere through the relay): parts skip the
   * work of an event nobody hears.
   */
  readonly listens: ListensTo = (event, jobId, name, queue) =>
    (this.#target?.listenerCount(event) ?? 0) > 0 || this.#relay?.wants(event, jobId, name, queue) === true;
}

/**
 * Calls each of `emitter`'s listeners of `event` in turn, as `emit` would, except that one that throws or
 * rejects is logged on `log` and the others still run (`emit` stops at the first that throws).
 */
export function emitToEach(
  emitter: EventEmitter,
  event: string,
  args: readonly unknown[],
  log: Logger | undefined,
): void {
  for (const listener of emitter.rawListeners(event) as ((...args: unknown[]) => unknown)[]) {
    try {
      const result = listener.apply(emitter, args as unknown[]);
      if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function')
        (result as PromiseLike<unknown>).then(undefined, (error: unknown) =>
          log?.error({ err: error, event }, 'an event listener rejected; ignored'),
        );
    } catch (error) {
      log?.error({ err: error, event }, 'an event listener threw; ignored');
    }
  }
}

/**
 * A listener added to `emitter` for a name that is not one of warren's events (nor EventEmitter's own
 * `error`, `newListener`, `removeListener`) is refused with a ConfigurationError: it would never be called.
 */
export function refuseUnknownEvents(emitter: EventEmitter): void {
  emitter.on('newListener', (event: string | symbol) => {
    if (typeof event !== 'string' || WARREN_EVENT_NAMES.has(event)) return;
    // EventEmitter's own: `events.once(warren, 'completed')` and `events.on` listen to 'error' as well
    if (event === 'newListener' || event === 'removeListener' || event === 'error') return;
    throw new ConfigurationError(
      `'${event}' is not a warren event, so a listener would never be called (events: ${[...WARREN_EVENT_NAMES].join(', ')})`,
    );
  });
}

/**
 * An async listener of `emitter` (made with `captureRejections: true`) that rejects is logged and
 * ignored, like one that throws: a listener's bug must not crash the worker (and since `failed` fires
 * before the dead letter is confirmed, the job would come back and crash the next process too).
 */
export function ignoreListenerRejections(emitter: EventEmitter, log: Logger): void {
  const onRejection = (error: unknown, event: string | symbol) =>
    log.error({ err: error, event: String(event) }, 'an event listener rejected; ignored');
  Object.defineProperty(emitter, EventEmitter.captureRejectionSymbol, { value: onRejection });
}
