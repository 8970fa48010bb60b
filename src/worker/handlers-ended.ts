import type { Delivery } from './delivery';

/**
 * Waits until the handlers now running for `deliveries` have returned, or `timeoutMs` passed (true: they all
 * did). An aborted run settles at once while its handler's code may still run: an ordered partition closes
 * its channel (the broker then hands it to the next owner) only after that code has ended too.
 */
export function handlersEnded(deliveries: Iterable<Delivery>, timeoutMs: number): Promise<boolean> {
  const ended: Promise<unknown>[] = [];
  for (const delivery of deliveries) {
    const running = delivery.running;
    // an isolate's outcome settles when the isolate has exited (a kill included): its code has ended too
    if (running !== undefined) ended.push(running.ended ?? running.outcome);
  }
  if (ended.length === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    void Promise.allSettled(ended).then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
