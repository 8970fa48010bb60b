import type * as amqp from 'amqplib';
import type { AckBatcher } from './ack-batcher';
import type { Settlement } from './delivery';

/**
 * The settlement of an ordered partition's deliveries: it does nothing while `isFenced()` (the partition went
 * to another worker, docs/guide/ordered-partitions.md), so that the channel's close returns every delivery to
 * the partition in order instead of an ack, a nack or a reject slipping out after the lease ended.
 */
export function fencedSettlement(batcher: AckBatcher, isFenced: () => boolean): Settlement {
  const unlessFenced =
    <A extends unknown[]>(settle: (...args: A) => void) =>
    (...args: A): void => {
      if (!isFenced()) settle(...args);
    };
  return {
    ack: unlessFenced((tag: number) => batcher.ack(tag)),
    flush: unlessFenced(() => batcher.flush()),
    requeue: unlessFenced((message: amqp.Message) => batcher.requeue(message)),
    reject: unlessFenced((message: amqp.Message) => batcher.reject(message)),
    retryInPlace: unlessFenced((message: amqp.Message) => batcher.retryInPlace(message)),
  };
}
