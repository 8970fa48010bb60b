import type * as amqp from 'amqplib';
import type { WarrenErrorContext } from '../core';

export interface OutgoingMessage {
  readonly exchange: string;
  readonly routingKey: string;
  readonly content: Buffer;
  readonly properties: amqp.Options.Publish;
  /** Give up (PUBLISH_TIMEOUT) when no confirm arrived by this time (ms since epoch). */
  readonly deadline: number;
  readonly context: WarrenErrorContext;
}

/**
 * An OutgoingMessage built on a path that runs for every job (a retry's copy): a class, so that V8 never
 * pretenures it (see PendingPublish).
 */
export class OutgoingPublish implements OutgoingMessage {
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    readonly content: Buffer,
    readonly properties: amqp.Options.Publish,
    readonly deadline: number,
    readonly context: WarrenErrorContext,
  ) {}
}

/** A `sendMany` call: its outcomes fill in as its messages settle. */
export interface Batch {
  readonly outcomes: (Error | undefined)[];
  open: number;
  readonly resolve: (outcomes: (Error | undefined)[]) => void;
}

/** One message the confirm publisher has taken and not yet settled. */
export interface Pending {
  readonly message: OutgoingMessage;
  /** A single `send`: its promise's functions; a batched one: its batch and its index in it. */
  readonly resolve: (() => void) | undefined;
  readonly reject: ((error: Error) => void) | undefined;
  readonly batch: Batch | undefined;
  readonly index: number;
  settled: boolean;
  returned: boolean;
  nacks: number;
  /** Generation of the channel it was written to; 0 while buffered. */
  writtenOn: number;
  /** Generation of the channel it was in flight on when the broker closed it refusing a message. */
  lostOn: number;
  /** How many channels it was lost with that way. */
  refusals: number;
  /** Sent only alone on the channel: it was lost with a refused message that could not be named. */
  mustGoAlone: boolean;
  /** When it was last sent again after a nack (ms since epoch; 0: never): that attempt's round trip. */
  resentAt: number;
}

export function newPending(
  message: OutgoingMessage,
  resolve: (() => void) | undefined,
  reject: ((error: Error) => void) | undefined,
  batch: Batch | undefined,
  index: number,
): Pending {
  return new PendingPublish(message, resolve, reject, batch, index);
}

/**
 * A class, not an object literal: V8 tracks an object literal's allocation site and, once a burst of them
 * outlived a young-generation collection (a batch waiting for its confirms, a confirm channel still
 * opening), allocates every later one straight in the old generation, for good. A pending message then
 * held its message, its properties and the awaiting job's promise chain there until the next full
 * collection: a third of the worker's allocations promoted on the retry path (profiled). Instances of a
 * class are never pretenured that way.
 */
class PendingPublish implements Pending {
  settled = false;
  returned = false;
  nacks = 0;
  writtenOn = 0;
  lostOn = 0;
  refusals = 0;
  mustGoAlone = false;
  resentAt = 0;

  constructor(
    readonly message: OutgoingMessage,
    readonly resolve: (() => void) | undefined,
    readonly reject: ((error: Error) => void) | undefined,
    readonly batch: Batch | undefined,
    readonly index: number,
  ) {}
}

/** Resolves or rejects a single send, or fills in its batch's outcome (resolving the batch when last). */
export function settlePending(pending: Pending, error: Error | undefined): void {
  const batch = pending.batch;
  if (batch) {
    batch.outcomes[pending.index] = error;
    if (--batch.open === 0) batch.resolve(batch.outcomes);
  } else if (error) pending.reject?.(error);
  else pending.resolve?.();
}
