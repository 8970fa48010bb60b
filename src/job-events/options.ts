import { checkInteger, checkKnownKeys, ConfigurationError, validationMessage } from '../core';

/**
 * The live job events this process sends to subscribers in other processes (docs/guide/events.md).
 * Events are sent only for filters a subscriber holds: with no subscriber they cost a map lookup.
 */
export interface EventsOptions {
  /**
   * Send this process's job events to subscribers (and learn their filters). Default true. Off, a
   * subscriber elsewhere hears nothing from this process; `warren.on(...)` is unaffected.
   */
  readonly publish?: boolean;
  /**
   * A `completed` result or a `progress` value larger than this (as JSON, bytes) is sent without it,
   * with `isTruncated: true`. Default 16 384: events are a live view; the result itself is for
   * `publishWithResult`.
   */
  readonly maxValueBytes?: number;
}

export const EVENTS_DEFAULTS = Object.freeze({ publish: true, maxValueBytes: 16_384 });

export type ResolvedEventsOptions = Readonly<Required<EventsOptions>>;

export function resolveEventsOptions(input: EventsOptions = {}, path = 'events'): ResolvedEventsOptions {
  checkKnownKeys(path, input, { publish: true, maxValueBytes: true });
  const publish = input.publish ?? EVENTS_DEFAULTS.publish;
  if (typeof publish !== 'boolean')
    throw new ConfigurationError(validationMessage(`${path}.publish`, 'must be a boolean', publish));
  return Object.freeze({
    publish,
    maxValueBytes: checkInteger(
      `${path}.maxValueBytes`,
      input.maxValueBytes ?? EVENTS_DEFAULTS.maxValueBytes,
      0,
      512 * 1024,
    ),
  });
}

/** How one subscription is bounded (`warren.events.subscribe(filter, options)`). */
export interface SubscribeOptions {
  /**
   * Events the subscription's queue holds at most: when full, the broker drops the oldest and the
   * subscription tells how many it missed (a `gap`). Default 1000.
   */
  readonly maxLength?: number;
}

export const SUBSCRIBE_DEFAULTS = Object.freeze({
  maxLength: 1000,
  /** A subscriber's filter is forgotten by the sending processes this long after its last renewal, ms. */
  leaseMs: 30_000,
});

export interface ResolvedSubscribeOptions {
  readonly maxLength: number;
  readonly leaseMs: number;
}

export function resolveSubscribeOptions(input: SubscribeOptions = {}): ResolvedSubscribeOptions {
  checkKnownKeys('subscribe options', input, { maxLength: true });
  return Object.freeze({
    maxLength: checkInteger(
      'subscribe.maxLength',
      input.maxLength ?? SUBSCRIBE_DEFAULTS.maxLength,
      1,
      1_000_000,
    ),
    leaseMs: SUBSCRIBE_DEFAULTS.leaseMs,
  });
}
