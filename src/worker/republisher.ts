import type * as amqp from 'amqplib';
import { PublishError, type EmitEvent, type Logger } from '../core';
import type { ConfirmPublisher } from '../connection';
import {
  deadLetterProperties,
  HEADERS,
  republishProperties,
  withOwnHeadersOnly,
  type DeadReason,
  type DecodedJob,
} from '../message';
import { delayRoute, type PlannedJobQueue, type TopologyPlan } from '../topology';
import type { ResolvedWorkerOptions } from './options';

/** How the consumer settles one delivery on the channel it came from. */
export interface Settler {
  /**
   * `immediate` sends the ack now instead of with the next batch: used after a republish, whose copy
   * may come back before the batch goes out (a crash in between would leave both copies alive).
   */
  ack(immediate?: boolean): void;
  requeue(): void;
  /** Dead-letters the delivery through the broker (nack without requeue), body untouched. */
  reject(): void;
}

export interface RepublisherDeps {
  readonly plan: TopologyPlan;
  readonly confirms: ConfirmPublisher;
  readonly options: ResolvedWorkerOptions;
  readonly emit: EmitEvent;
  readonly log: Logger;
}

type RepublishContext = { jobId: string; name: string; queue: string; attempt: number };

/**
 * Sends a delivery on (a retry, a re-delay, a dead letter) and settles the original only after the
 * broker confirmed the copy. What the broker refuses is never sent again and again: a retry it refuses
 * goes to dead letters as `unrepublishable`, a dead letter it refuses is rejected so that the broker
 * parks it through the queue's own dead-letter exchange.
 */
export class Republisher {
  constructor(private readonly deps: RepublisherDeps) {}

  /** Back to its queue through the delay levels (or at once); a refused one is parked `unrepublishable`. */
  async delayed(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    delayMs: number,
    headers: Record<string, unknown>,
    context: RepublishContext,
  ): Promise<boolean> {
    const delay = this.deps.plan.delay;
    const changes: Record<string, unknown> = {
      ...headers,
      [HEADERS.deliverAt]: delayMs > delay.maxDelayMs ? Date.now() + delayMs : undefined,
    };
    const route =
      delayMs > 0 ? delayRoute(delay, delayMs, queue.name) : { exchange: '', routingKey: queue.name };
    return this.republish(
      message,
      settle,
      route.exchange,
      route.routingKey,
      republishProperties(message.properties, changes),
      context,
      async (error) => {
        // The broker will not take this message back (it closed the channel for it alone, or its
        // body is over the broker's limit): park it instead of retrying a publish that cannot succeed.
        await this.deadLetter(message, queue, settle, 'unrepublishable', error, context);
        return false;
      },
    );
  }

  /** To the queue's dead letters with its reason; a refused one is rejected for the broker to park. */
  async deadLetter(
    message: amqp.ConsumeMessage,
    queue: PlannedJobQueue,
    settle: Settler,
    reason: DeadReason,
    error: unknown,
    job: Pick<DecodedJob, 'jobId' | 'name' | 'attempt'> | undefined,
    /** Headers an instrumentation carries to the next run (a trace link). */
    carried?: Record<string, unknown>,
  ): Promise<void> {
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
    if (
      await this.republish(
        message,
        settle,
        queue.deadExchange,
        queue.name,
        properties,
        { ...context, name: context.name ?? '' },
        async (refusal) => {
          // Even warren's own headers alone are refused (the body is over the broker's limit, which
          // was lowered after the message arrived): the broker dead-letters it itself, body untouched,
          // through the queue's dead-letter exchange (its x-death reason is then `rejected`).
          this.deps.log.error(
            { ...context, reason, err: refusal },
            'the broker refuses the dead letter; rejecting the delivery so that the broker parks it',
          );
          settle.reject();
          return true;
        },
      )
    ) {
      this.deps.log.warn({ ...context, reason, err: error }, 'job dead-lettered');
      this.deps.emit('deadLettered', { ...context, name: context.name, reason, error });
    }
  }

  /**
   * Confirm first, then ack. If the broker does not confirm, the original goes back to the queue.
   * A message whose own headers cannot be encoded again (a foreign table near amqplib's 64 KiB limit
   * that warren's headers push over it, a value of no AMQP type) travels on with warren's headers
   * only: requeued as it is, it would fail the same way on every delivery.
   */
  private async republish(
    message: amqp.ConsumeMessage,
    settle: Settler,
    exchange: string,
    routingKey: string,
    properties: amqp.Options.Publish,
    context: RepublishContext,
    onRefused: (error: PublishError) => Promise<boolean>,
  ): Promise<boolean> {
    const send = (props: amqp.Options.Publish) =>
      this.deps.confirms.send({
        exchange,
        routingKey,
        content: message.content,
        properties: props,
        deadline: Date.now() + this.deps.options.republishTimeoutMs,
        context: {
          jobId: context.jobId,
          jobName: context.name,
          queue: context.queue,
          attempt: context.attempt,
        },
      });
    try {
      await send(properties).catch((error: unknown) => {
        if (!isPublishError(error, 'PUBLISH_UNENCODABLE', 'PUBLISH_REFUSED')) throw error;
        this.deps.log.warn(
          { ...context, err: error },
          "the message's properties cannot be republished; it goes on with warren's headers only",
        );
        return send(withOwnHeadersOnly(properties));
      });
      settle.ack(true);
      return true;
    } catch (error) {
      if (isPublishError(error, 'PUBLISH_REFUSED', 'PUBLISH_TOO_LARGE')) return onRefused(error);
      this.deps.log.error(
        { ...context, err: error },
        'republish was not confirmed; returning the job to its queue',
      );
      settle.requeue();
      return false;
    }
  }
}

function isPublishError(error: unknown, ...codes: PublishError['code'][]): error is PublishError {
  return error instanceof PublishError && codes.includes(error.code);
}
