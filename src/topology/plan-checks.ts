import { TopologyError } from '../core';
import type { BindingDeclaration, ExchangeDeclaration, QueueDeclaration, QueueType } from './define-topology';
import type { PlannedQueue } from './topology-plan';

/** The characters a queue, exchange or rate-limiter key may contain. */
export const KEY_PATTERN = /^[A-Za-z0-9_.:-]+$/;

/** A count of planned queues behind one queue (fair share's lanes, ordered partitions): an integer in range. */
export function checkQueueCount(path: string, count: unknown, key: string, min: number, max: number): void {
  if (!Number.isInteger(count) || (count as number) < min || (count as number) > max)
    throw new TopologyError(
      `${path} must be an integer from ${min} to ${max} (got ${JSON.stringify(count)})`,
      {
        queue: key,
      },
    );
}

/**
 * A declaration object's keys against the ones its type has: a typo (`maxPriorty`, `fairnes`) is refused, not
 * planned as if absent.
 */
export function checkDeclarationKeys(
  path: string,
  value: unknown,
  known: readonly string[],
  queue?: string,
): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new TopologyError(
      `${path} must be an object (got ${JSON.stringify(value)})`,
      queue ? { queue } : {},
    );
  for (const key of Object.keys(value))
    if (!known.includes(key))
      throw new TopologyError(
        `${path}.${key} is not an option (known: ${known.join(', ')})`,
        queue ? { queue } : {},
      );
}

const QUEUE_KEYS = [
  'type',
  'maxPriority',
  'messageTtlMs',
  'maxLength',
  'overflow',
  'singleActiveConsumer',
  'deliveryLimit',
  'inPlaceRetryMs',
  'durable',
  'bind',
  'fairness',
  'partitions',
  'arguments',
] as const satisfies readonly (keyof QueueDeclaration)[];
const BINDING_KEYS = [
  'exchange',
  'pattern',
  'arguments',
] as const satisfies readonly (keyof BindingDeclaration)[];

/** Validates a queue declaration and returns its type: quorum unless it says classic or has maxPriority alone. */
export function queueType(decl: QueueDeclaration, path: string): QueueType {
  checkDeclarationKeys(path, decl, QUEUE_KEYS);
  for (const [i, binding] of bindingsOf(decl).entries())
    checkDeclarationKeys(
      Array.isArray(decl.bind) ? `${path}.bind[${i}]` : `${path}.bind`,
      binding,
      BINDING_KEYS,
    );
  if (decl.type !== undefined && decl.type !== 'quorum' && decl.type !== 'classic') {
    throw new TopologyError(`${path}.type must be 'quorum' or 'classic' (got ${JSON.stringify(decl.type)})`);
  }
  if (decl.maxPriority !== undefined) {
    if (!Number.isInteger(decl.maxPriority) || decl.maxPriority < 1 || decl.maxPriority > 255) {
      throw new TopologyError(
        `${path}.maxPriority must be an integer from 1 to 255, and should stay <= 10 (got ${decl.maxPriority})`,
      );
    }
    // Quorum priorities (RabbitMQ 4.0+) are opted into by writing type 'quorum' beside maxPriority; a queue
    // with maxPriority alone stays classic, so an upgrade never changes a queue's type.
  }
  const type = decl.type ?? (decl.maxPriority !== undefined ? 'classic' : 'quorum');
  if ((decl as { durable?: unknown }).durable === false)
    throw new TopologyError(
      `${path}.durable must be true (got false): RabbitMQ 4.3 refuses transient non-exclusive queues`,
    );
  if (type === 'classic' && decl.deliveryLimit !== undefined) {
    throw new TopologyError(
      `${path}.deliveryLimit applies to quorum queues only (classic queues: warren counts redeliveries itself)`,
    );
  }
  // The storage version of a classic queue (3.10-3.12 opt in to 2; 4.x has only 2): a quorum queue refuses it
  if (type !== 'classic' && decl.arguments?.['x-queue-version'] !== undefined) {
    throw new TopologyError(
      `${path}.arguments['x-queue-version'] applies to classic queues only (RabbitMQ refuses it on a ${type} queue)`,
    );
  }
  for (const [field, value] of [
    ['messageTtlMs', decl.messageTtlMs],
    ['maxLength', decl.maxLength],
    ['deliveryLimit', decl.deliveryLimit],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0))
      throw new TopologyError(`${path}.${field} must be an integer >= 0 (got ${value})`);
  }
  return type;
}

/**
 * The invariant behind every plan: no transient non-exclusive queue (RabbitMQ 4.3 refuses them by default).
 * The assertion builders only make durable ones; this catches a raw argument or a future builder that would
 * not.
 */
export function requireDurable(queue: PlannedQueue): void {
  const { durable, exclusive } = queue.assertion as { durable: boolean; exclusive: boolean };
  if (!durable && !exclusive)
    throw new TopologyError(
      `queue '${queue.name}' would be transient and non-exclusive, which RabbitMQ 4.3 refuses`,
      { queue: queue.name },
    );
}

export function bindingsOf(decl: QueueDeclaration): readonly BindingDeclaration[] {
  if (decl.bind === undefined) return [];
  return Array.isArray(decl.bind)
    ? (decl.bind as readonly BindingDeclaration[])
    : [decl.bind as BindingDeclaration];
}

export function requireExchange(
  key: string,
  all: Readonly<Record<string, ExchangeDeclaration>>,
  path: string,
): void {
  if (all[key] === undefined) {
    const known = Object.keys(all);
    throw new TopologyError(
      `${path}: unknown exchange '${key}'${known.length ? ` (declared: ${known.join(', ')})` : ' (no exchanges are declared)'}`,
    );
  }
}

/** The binding pattern when a declaration gives none: everything on a topic exchange. */
export function defaultPattern(decl: ExchangeDeclaration): string {
  return decl.type === 'topic' ? '#' : '';
}
