import type { WarrenParts } from './parts';

/**
 * The graceful shutdown of a warren's parts, in order: stop answering operators, stop the outbox relay,
 * leave cron leadership, drain the worker within `graceMs`, stop the add-ons, flush the publisher's
 * confirms, close the connection.
 */
export async function shutDown(parts: WarrenParts, graceMs: number): Promise<void> {
  parts.control.listener.close();
  // Before the publisher flushes: the relay waits for its batch's confirms and claims no more.
  await parts.outbox?.relay?.stop();
  // First, so that another process leads (and refills permits) while this one drains its jobs.
  await Promise.all([parts.scheduling.stop(), parts.worker.stopLimiters()]);
  await parts.worker.stop(graceMs);
  for (const addOn of parts.addOns) await addOn.stop().catch(() => undefined);
  await parts.publisher.close();
  const flushed = await parts.confirms.flush(graceMs);
  if (!flushed)
    parts.log.warn(
      { pending: parts.confirms.pendingCount },
      'closing with publishes the broker has not confirmed; they fail with SHUTTING_DOWN',
    );
  await parts.confirms.close();
  parts.breakers.shutdown();
  await parts.manager.close();
  parts.log.info('closed');
}

/**
 * Closes gracefully on `signals`, then lets the process exit (1 if closing failed). Returns a function
 * that removes the handlers.
 */
export function closeOnSignals(
  close: () => Promise<void>,
  log: WarrenParts['log'],
  signals: readonly NodeJS.Signals[],
): () => void {
  const handler = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'signal received; closing gracefully');
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'graceful close failed');
        process.exit(1);
      },
    );
  };
  for (const signal of signals) process.once(signal, handler);
  return () => {
    for (const signal of signals) process.removeListener(signal, handler);
  };
}
