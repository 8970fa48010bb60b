import type { EmitEvent, Logger } from '../core';
import { Outbox, OutboxRelay, resolveOutboxOptions, type OutboxOptions } from '../outbox';
import type { JobPublisher } from '../publisher';

/** A warren's outbox and, when this process relays, its relay. */
export interface WarrenOutbox {
  readonly outbox: Outbox;
  readonly relay: OutboxRelay | undefined;
}

/**
 * Wires `createWarren({ outbox })`: the outbox checks jobs with the publisher's own checks when they
 * are written; the relay sends them with the publisher, without checking them again (a schema that
 * transforms its input need not accept its own output). Creates the table unless told not to.
 */
export async function createOutbox(
  options: OutboxOptions | undefined,
  publisher: JobPublisher,
  log: Logger,
  emit: EmitEvent,
): Promise<WarrenOutbox | undefined> {
  if (options === undefined) return undefined;
  const resolved = resolveOutboxOptions(options);
  const outbox = new Outbox(resolved, (name, data, publishOptions) =>
    publisher.validate(name, data, publishOptions),
  );
  if (resolved.createTable) await outbox.createTable();
  const relay =
    resolved.relay === false
      ? undefined
      : new OutboxRelay(
          resolved,
          (name, payload, sendOptions) => publisher.send(name, payload, sendOptions),
          log,
          emit,
        );
  return { outbox, relay };
}
