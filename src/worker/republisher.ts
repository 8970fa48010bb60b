import type * as amqp from 'amqplib';
import { PublishError, type EmitEvent, type Logger, type WarrenErrorContext } from '../core';
import { OutgoingPublish, type ConfirmPublisher } from '../connection';
import {
  deadLetterProperties,
  HEADERS,
  republishProperties,
  withOwnHeadersOnly,
  type DeadReason,
} from '../message';
import { routeAfter, type DelayPlan } from '../topology';
import type { Delivery, JobDelivery } from './delivery';

export interface RepublisherDeps {
  readonly delay: DelayPlan;
  readonly confirms: Pick<ConfirmPublisher, 'send'>;
  readonly republishTimeoutMs: number;
  readonly emit: EmitEvent;
  readonly log: Logger;
}

type RepublishContext = { jobId: string; name: string; queue: string; attempt: number };

/*
 * A retry's objects live until the broker confirms its copy. Built as object literals, V8 pretenured them
 * for good after one burst outlived a young-generation collection (see PendingPublish): classes instead.
 */

/** The job a retry's copy is of, for its log lines. */
class RetryContext implements RepublishContext {
  constructor(
    readonly jobId: string,
    readonly name: string,
    readonly queue: string,
    readonly attempt: number,
  ) {}
}

/** The job a copy is of, for the PublishError of a copy the broker does not confirm. */
class CopyErrorContext implements WarrenErrorContext {
  constructor(
    readonly jobId: string,
    readonly jobName: string,
    readonly queue: string,
    readonly attempt: number,
  ) {}
}

/** Where a copy goes: a delay level's exchange, the default exchange, or the queue's dead-letter exchange. */
type Route = { readonly exchange: string; readonly routingKey: string };

/**
 * Sends a delivery on (a retry, a re-delay, a dead letter) and settles the original only after the
 * broker confirmed the copy. What the broker refuses is never sent again and again: a retry it refuses
 * goes to dead letters as `unrepublishable`, a dead letter it refuses is rejected so that the broker
 * parks it through the queue's own dead-letter exchange.
 */
export class Republisher {
  constructor(private readonly deps: RepublisherDeps) {}

  /**
   * Back to its queue through the delay levels (or at once); a refused one is parked `unrepublishable`.
   * `headers`: the header changes, a fresh object of the caller's that this adds `warren-deliver-at` to.
   */
  async delayed(delivery: JobDelivery, delayMs: number, headers: Record<string, unknown>): Promise<boolean> {
    const { message, queue } = delivery;
    const delay = this.deps.delay;
    // added to the caller's own object: a spread with a computed key is built on V8's slow path, every retry
    headers[HEADERS.deliverAt] = delayMs > delay.maxDelayMs ? Date.now() + delayMs : undefined;
    const route = routeAfter(delay, delayMs, queue.name);
    const { job } = delivery;
    const sent = await this.republish(
      delivery,
      route,
      republishProperties(message.properties, headers),
      new RetryContext(job.jobId, job.name, queue.key, job.attempt),
    );
    if (typeof sent === 'boolean') return sent;
    // The broker will not take this message back (it closed the channel for it alone, or its
    // body is over the broker's limit): park it instead of retrying a publish that cannot succeed.
    await this.deadLetter(delivery, 'unrepublishable', sent);
    return false;
  }

  /**
   * To the queue's dead letters with its reason; a refused one is rejected for the broker to park.
   * `carried`: headers an instrumentation carries to the next run (a trace link).
   */
  async deadLetter(
    delivery: Delivery,
    reason: DeadReason,
    error: unknown,
    carried?: Record<string, unknown>,
  ): Promise<void> {
    const { message, queue, job } = delivery;
    const attempt = job?.attempt ?? 1;
    const context = {
      jobId: job?.jobId ?? String(message.properties.messageId ?? ''),
      name: job?.name ?? message.properties.type,
      queue: queue.key,
      attempt,
    };
    const properties = deadLetterProperties(message.properties, {
      reason,
      error,
      queue: queue.key,
      attempt,
      deadAt: Date.now(),
    });
    if (carried !== undefined) Object.assign(properties.headers!, carried);
    const sent = await this.republish(
      delivery,
      { exchange: queue.deadExchange, routingKey: queue.name },
      properties,
      { ...context, name: context.name ?? '' },
    );
    if (sent === false) return;
    if (sent !== true) {
      // Even warren's own headers alone are refused (the body is over the broker's limit, which
      // was lowered after the message arrived): the broker dead-letters it itself, body untouched,
      // through the queue's dead-letter exchange (its x-death reason is then `rejected`).
      this.deps.log.error(
        { ...context, reason, err: sent },
        'the broker refuses the dead letter; rejecting the delivery so that the broker parks it',
      );
      delivery.reject();
    }
    this.deps.log.warn({ ...context, reason, err: error }, 'job dead-lettered');
    const ran = delivery.startedAt > 0 ? { durationMs: Date.now() - delivery.startedAt } : {};
    this.deps.emit('deadLettered', {
      ...context,
      ...ran,
      name: context.name,
      reason,
      error,
      body: message.content,
    });
  }

  /**
   * Confirm first, then ack: true once the copy is confirmed and the original acked. If the broker does
   * not confirm, the original goes back to the queue (false). A copy the broker refuses for good comes
   * back as its PublishError, the original unsettled, for the caller to park. A message whose own
   * headers cannot be encoded again (a foreign table near amqplib's 64 KiB limit that warren's headers
   * push over it, a value of no AMQP type) travels on with warren's headers only: requeued as it is, it
   * would fail the same way on every delivery.
   */
  private async republish(
    delivery: Delivery,
    route: Route,
    properties: amqp.Options.Publish,
    context: RepublishContext,
  ): Promise<boolean | PublishError> {
    try {
      await this.send(delivery, route, properties, context).catch((error: unknown) => {
        if (!isPublishError(error, 'PUBLISH_UNENCODABLE', 'PUBLISH_REFUSED')) throw error;
        this.deps.log.warn(
          { ...context, err: error },
          "the message's properties cannot be republished; it goes on with warren's headers only",
        );
        return this.send(delivery, route, withOwnHeadersOnly(properties), context);
      });
      delivery.ack(true);
      return true;
    } catch (error) {
      if (isPublishError(error, 'PUBLISH_REFUSED', 'PUBLISH_TOO_LARGE')) return error;
      this.deps.log.error(
        { ...context, err: error },
        'republish was not confirmed; returning the job to its queue',
      );
      delivery.requeue();
      return false;
    }
  }

  private send(
    delivery: Delivery,
    route: Route,
    properties: amqp.Options.Publish,
    context: RepublishContext,
  ): Promise<void> {
    return this.deps.confirms.send(
      new OutgoingPublish(
        route.exchange,
        route.routingKey,
        delivery.message.content,
        properties,
        Date.now() + this.deps.republishTimeoutMs,
        new CopyErrorContext(context.jobId, context.name, context.queue, context.attempt),
      ),
    );
  }
}

function isPublishError(error: unknown, ...codes: PublishError['code'][]): error is PublishError {
  return error instanceof PublishError && codes.includes(error.code);
}
