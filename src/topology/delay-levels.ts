import type { QueueType } from './define-topology';
import type { TopologyNaming } from './naming';

/**
 * Binary delay levels (the scheme NServiceBus and Celery 5.5 use), with no broker plugin:
 * level k is a topic exchange plus a queue whose queue-wide TTL is 2^k units and which dead-letters
 * into level k-1 (level 0 into the delivery exchange). The routing key spells the delay in bits,
 * most significant first, then the destination queue. Each level exchange sends a message whose bit
 * is 1 into its queue (it waits 2^k units) and one whose bit is 0 straight on to the next level
 * (an exchange-to-exchange hop, no waiting). Every message in a level queue waits exactly that
 * queue's TTL, so a long delay never holds back a short one.
 */
export interface DelayLevel {
  readonly level: number;
  /** Exchange and queue share this name. */
  readonly name: string;
  readonly ttlMs: number;
}

/**
 * A hold: one queue whose queue-wide TTL is one exact delay, dead-lettering straight into one job queue
 * (through the default exchange). A delay to that queue that equals a hold's waits there, one hop, instead
 * of in the levels its bits name: a 1 s retry is one queue instead of two levels, four topic exchanges and
 * the delivery exchange's match on a 30-word key, the path raw amqplib takes with one TTL queue. warren
 * plans one for every fixed backoff among the jobs it plans, per job queue, of that queue's type: a
 * quorum queue's hold is quorum too (replicated, at-least-once dead-lettering), a classic queue's is
 * classic (on the classic queue's node, as the job is; about half the broker's work of a quorum hold).
 */
export interface DelayHold {
  /** The hold queue, published to through the default exchange. */
  readonly name: string;
  readonly ttlMs: number;
  /** Full name of the job queue it dead-letters into. */
  readonly queueName: string;
  /** The job queue's type. */
  readonly type: QueueType;
}

/** A hold to plan: a job queue (full name and type) and the delay, ms. */
export interface HoldRequest {
  readonly queueName: string;
  readonly type: QueueType;
  readonly delayMs: number;
}

export interface DelayPlan {
  readonly unitMs: number;
  readonly levelCount: number;
  readonly queueType: QueueType;
  /** Longest delay one pass through the levels can hold: (2^levels - 1) units. */
  readonly maxDelayMs: number;
  /**
   * The highest level: a delayed message may enter here (delayRoute enters lower, at its highest set bit).
   */
  readonly entryExchange: string;
  readonly deliveryExchange: string;
  readonly levels: readonly DelayLevel[];
  /** The holds, by name; empty when no planned job has a fixed backoff. */
  readonly holds: readonly DelayHold[];
}

export function planDelayLevels(
  naming: TopologyNaming,
  unitMs: number,
  levelCount: number,
  queueType: QueueType,
  holdRequests: readonly HoldRequest[] = [],
): DelayPlan {
  const levels: DelayLevel[] = [];
  for (let level = 0; level < levelCount; level++)
    levels.push({ level, name: naming.delayLevel(level), ttlMs: unitMs * 2 ** level });
  const maxDelayMs = (2 ** levelCount - 1) * unitMs;
  const holds = new Map<string, DelayHold>();
  for (const { queueName, type, delayMs } of holdRequests) {
    if (!Number.isInteger(delayMs) || delayMs <= 0 || delayMs > maxDelayMs) continue;
    const name = naming.delayHold(queueName, delayMs);
    holds.set(name, { name, ttlMs: delayMs, queueName, type });
  }
  return {
    unitMs,
    levelCount,
    queueType,
    maxDelayMs,
    entryExchange: naming.delayLevel(levelCount - 1),
    deliveryExchange: naming.delayDelivery(),
    levels,
    holds: [...holds.values()].sort((a, b) => a.name.localeCompare(b.name)),
  };
}

/** Binding pattern of level k: a fixed number of `*` words skips the higher bits. */
export function delayLevelPattern(plan: DelayPlan, level: number, bit: 0 | 1): string {
  return `${'*.'.repeat(plan.levelCount - 1 - level)}${bit}.#`;
}

/**
 * The delivery exchange's binding for one destination: exactly `levelCount` bit words, then the queue
 * name, so that queue `a.b` never receives what is meant for queue `b`.
 */
export function delayDeliveryPattern(plan: DelayPlan, queueName: string): string {
  return `${'*.'.repeat(plan.levelCount)}${queueName}`;
}

export interface DelayRoute {
  readonly exchange: string;
  readonly routingKey: string;
  /** The delay this pass through the levels gives (rounded up to the unit, capped at maxDelayMs). */
  readonly delayedMs: number;
}

/**
 * Route of a message that must wait `delayMs` (rounded up to the unit, never early) before reaching
 * `queueName`.
 */
export function delayRoute(plan: DelayPlan, delayMs: number, queueName: string): DelayRoute {
  if (plan.holds.length > 0) {
    const hold = plan.holds.find((h) => h.ttlMs === delayMs && h.queueName === queueName);
    if (hold !== undefined) return new Route('', hold.name, delayMs);
  }
  const maxUnits = 2 ** plan.levelCount - 1;
  const units = Math.min(maxUnits, Math.max(0, Math.ceil(delayMs / plan.unitMs)));
  const bits: string[] = [];
  let highest = 0;
  // Arithmetic rather than bit operators: more than 31 levels overflow JavaScript's 32-bit shifts.
  for (let level = plan.levelCount - 1; level >= 0; level--) {
    const bit = Math.floor(units / 2 ** level) % 2;
    if (bit === 1 && highest === 0) highest = level;
    bits.push(String(bit));
  }
  // Enter at the highest level whose bit is set: the levels above it would only pass the message down
  // through one topic exchange each, and under load that routing is what makes delays late.
  return new Route(plan.levels[highest]!.name, `${bits.join('.')}.${queueName}`, units * plan.unitMs);
}

/**
 * Route of a copy sent back to `queueName` after `delayMs` (a retry, a re-delay): through the delay levels or
 * a hold, or at once (0 or less) straight to the queue through the default exchange.
 */
export function routeAfter(plan: DelayPlan, delayMs: number, queueName: string): DelayRoute {
  return delayMs > 0 ? delayRoute(plan, delayMs, queueName) : new Route('', queueName, 0);
}

/** An instance of a class, as every object of a retry's copy (see OutgoingPublish in connection). */
class Route implements DelayRoute {
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    readonly delayedMs: number,
  ) {}
}
