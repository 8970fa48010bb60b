import type { Delivery } from './delivery';

/**
 * The deliveries a consumer holds beyond its concurrency, first in first out: each starts when a run
 * ends. At most the queue's concurrency of them, so an array emptied as it drains is enough.
 */
export class HeldDeliveries {
  private items: Delivery[] = [];
  private head = 0;

  push(delivery: Delivery): void {
    this.items.push(delivery);
  }

  /** Empties it: every held delivery, in arrival order. */
  takeAll(): Delivery[] {
    const all = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return all;
  }

  shift(): Delivery | undefined {
    if (this.head >= this.items.length) return undefined;
    const next = this.items[this.head++];
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    }
    return next;
  }
}
