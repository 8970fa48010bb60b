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
 * A hold: one queue whose queue-wide TTL is one exact delay, dead-lettering straight into the delivery
 * exchange. A delay that equals a hold's waits there, one hop, instead of in the levels its bits name
 * (a 1 s retry: one queue instead of two levels and four topic exchanges; about a third of the broker's
 * work). warren plans one for every fixed backoff among the jobs it plans.
 */
export interface DelayHold {
  /** Exchange (fanout) and queue share this name. */
  readonly name: string;
  readonly ttlMs: number;
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
  /** Holds by their delay, ms; empty when no planned job has a fixed backoff. */
  readonly holds: readonly DelayHold[];
}

export function planDelayLevels(
  naming: TopologyNaming,
  unitMs: number,
  levelCount: number,
  queueType: QueueType,
  holdsMs: readonly number[] = [],
): DelayPlan {
  const levels: DelayLevel[] = [];
  for (let level = 0; level < levelCount; level++)
    levels.push({ level, name: naming.delayLevel(level), ttlMs: unitMs * 2 ** level });
  const maxDelayMs = (2 ** levelCount - 1) * unitMs;
  const holds = [...new Set(holdsMs)]
    .filter((ms) => Number.isInteger(ms) && ms > 0 && ms <= maxDelayMs)
    .sort((a, b) => a - b)
    .map((ttlMs) => ({ name: naming.delayHold(ttlMs), ttlMs }));
  return {
    unitMs,
    levelCount,
    queueType,
    maxDelayMs,
    entryExchange: naming.delayLevel(levelCount - 1),
    deliveryExchange: naming.delayDelivery(),
    levels,
    holds,
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
  const hold = plan.holds.find((h) => h.ttlMs === delayMs);
  // The delivery exchange routes on the bits' words then the queue: all bits 0 past a hold.
  if (hold !== undefined)
    return {
      exchange: hold.name,
      routingKey: `${'0.'.repeat(plan.levelCount)}${queueName}`,
      delayedMs: delayMs,
    };
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
  return {
    exchange: plan.levels[highest]!.name,
    routingKey: `${bits.join('.')}.${queueName}`,
    delayedMs: units * plan.unitMs,
  };
}
