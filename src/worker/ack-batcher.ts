import type * as amqp from 'amqplib';

/**
 * Acks for one channel, batched without weakening the guarantee: everything acked within one turn
 * of the event loop goes out together, the contiguous run of finished deliveries as a single
 * `multiple` ack, finished deliveries behind a still-running one individually (so a slow job never
 * holds the prefetch window hostage). A job is acked only after it finished.
 *
 * The batch goes at the end of the turn that acked it (`process.nextTick`, which runs once the
 * microtasks of every job finishing in that turn are done), not in a `setImmediate`: amqplib writes a
 * channel's frames from a `setImmediate` of its own, so a flush from a `setImmediate` reached the socket
 * one event-loop iteration later, while the broker, its prefetch window spent, sent nothing.
 */
export class AckBatcher {
  /** Delivery tags not yet settled on the broker, in delivery order. */
  private readonly outstanding = new Set<number>();
  private readonly finished = new Set<number>();
  private scheduled = false;
  private readonly flushLater = () => this.flush();

  /**
   * `prefetch`: when that many deliveries are all finished the broker is waiting on us, so the acks go at
   * once.
   */
  constructor(
    private readonly channel: amqp.Channel,
    private readonly prefetch: number,
  ) {}

  get unsettled(): number {
    return this.outstanding.size;
  }

  track(tag: number): void {
    this.outstanding.add(tag);
  }

  ack(tag: number): void {
    if (!this.outstanding.has(tag)) return;
    this.finished.add(tag);
    if (this.finished.size === this.outstanding.size && this.outstanding.size >= this.prefetch) {
      this.flush();
      return;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushLater);
    }
  }

  /** Returns a delivery to the queue (it is redelivered, marked `redelivered`). */
  requeue(message: amqp.Message): void {
    this.settleAlone(message, () => this.channel.nack(message, false, true));
  }

  /**
   * Returns a delivery as failed (`basic.reject` with requeue): a quorum queue with `x-delayed-retry-type:
   * failed` redelivers it after its delay and counts it in `x-delivery-count`, where a nack with requeue
   * (requeue above) comes back at once, uncounted (measured on RabbitMQ 4.3.6).
   */
  retryInPlace(message: amqp.Message): void {
    this.settleAlone(message, () => this.channel.reject(message, true));
  }

  /**
   * Rejects a delivery without requeue: the broker dead-letters it through the queue's own dead-letter
   * exchange, body untouched. The last resort for a message warren cannot republish at all.
   */
  reject(message: amqp.Message): void {
    this.settleAlone(message, () => this.channel.nack(message, false, false));
  }

  /** Settles one outstanding delivery by itself, after the acks batched before it went out. */
  private settleAlone(message: amqp.Message, settle: () => void): void {
    const tag = message.fields.deliveryTag;
    if (!this.outstanding.has(tag)) return;
    this.flush();
    this.outstanding.delete(tag);
    settleQuietly(settle);
  }

  flush(): void {
    this.scheduled = false;
    if (this.finished.size === 0) return;
    let upTo: number | undefined;
    for (const tag of this.outstanding) {
      if (!this.finished.has(tag)) break;
      upTo = tag;
      this.outstanding.delete(tag);
      this.finished.delete(tag);
    }
    if (upTo !== undefined) settleQuietly(() => this.channel.ack(fakeMessage(upTo!), true));
    for (const tag of this.finished) {
      this.outstanding.delete(tag);
      settleQuietly(() => this.channel.ack(fakeMessage(tag), false));
    }
    this.finished.clear();
  }
}

/** amqplib's ack only reads `fields.deliveryTag`. */
function fakeMessage(deliveryTag: number): amqp.Message {
  return { fields: { deliveryTag } } as amqp.Message;
}

/**
 * A settle on a closed channel throws synchronously; the broker requeues that delivery anyway, so
 * it is not an error worth crashing for.
 */
function settleQuietly(settle: () => void): void {
  try {
    settle();
  } catch {
    /* channel already closed: the message will be redelivered */
  }
}
