import { isStream, X_ARGS, type TopologyPlan } from '../topology';
import type { BrokerState } from './management-api';
import { bindingKey, bindingName } from './topology-diff';

/** One check of `verify`: what was checked on which entity, and whether the broker passes it. */
export interface VerifyCheck {
  /** The job queue key, or the entity name for checks outside a job queue. */
  readonly subject: string;
  readonly check: 'exists' | 'queue type' | 'delivery limit' | 'dead-letter wiring' | 'binding';
  readonly ok: boolean;
  readonly detail: string;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly checks: readonly VerifyCheck[];
}

/**
 * Checks what makes warren's guarantees hold, per job queue: it exists with the planned type; a
 * quorum queue has the planned delivery limit (the crash-loop backstop); its dead-letter exchange is
 * the planned one, exists and routes to its parking queue; every planned binding to it exists. Then
 * the delay levels exist, each planned stream exists and is a stream, and the control exchange exists.
 * Pure.
 */
export function verifyTopology(plan: TopologyPlan, broker: BrokerState): VerifyReport {
  const checks: VerifyCheck[] = [];
  const queues = new Map(broker.queues.map((q) => [q.name, q]));
  const exchanges = new Map(broker.exchanges.map((e) => [e.name, e]));
  const bindings = new Set(broker.bindings.map(bindingKey));
  const add = (subject: string, check: VerifyCheck['check'], ok: boolean, detail: string) =>
    checks.push({ subject, check, ok, detail });

  for (const planned of plan.queues.filter((q) => q.role === 'job')) {
    // a lane is checked like its queue, under a subject of its own (docs/guide/fair-share.md)
    const lane = planned.lane;
    const key =
      lane === undefined
        ? planned.key
        : `${planned.key} lane ${lane.index}${lane.draining ? ' (draining)' : ''}`;
    const actual = queues.get(planned.name);
    add(key, 'exists', actual !== undefined, actual ? planned.name : `queue ${planned.name} is missing`);
    if (!actual) continue;
    add(key, 'queue type', actual.type === planned.type, `planned ${planned.type}, broker ${actual.type}`);
    if (planned.type === 'quorum') {
      const want = planned.assertion.arguments[X_ARGS.deliveryLimit];
      const got = actual.arguments[X_ARGS.deliveryLimit];
      add(key, 'delivery limit', got === want, `planned ${String(want)}, broker ${String(got ?? 'none')}`);
    }
    const dlx = actual.arguments[X_ARGS.deadLetterExchange];
    const wired =
      dlx === planned.deadExchange &&
      exchanges.has(planned.deadExchange) &&
      queues.has(planned.deadQueue) &&
      bindings.has(
        bindingKey({
          source: planned.deadExchange,
          destination: planned.deadQueue,
          destinationType: 'queue',
          pattern: '',
        }),
      );
    add(
      key,
      'dead-letter wiring',
      wired,
      wired
        ? `${planned.name} -> ${planned.deadExchange} -> ${planned.deadQueue}`
        : `expected ${planned.name} -> ${planned.deadExchange} -> ${planned.deadQueue}; broker dead-letters to ${String(dlx ?? 'nowhere')}${exchanges.has(planned.deadExchange) ? '' : ', exchange missing'}${queues.has(planned.deadQueue) ? '' : ', parking queue missing'}`,
    );
    for (const b of plan.bindings.filter((b) => b.destination === planned.name))
      add(key, 'binding', bindings.has(bindingKey(b)), bindingName(b));
  }
  for (const level of plan.queues.filter((q) => q.role === 'delay'))
    add(level.name, 'exists', queues.has(level.name), `delay level ${level.name}`);
  for (const stream of plan.queues.filter(isStream)) {
    const actual = queues.get(stream.name);
    add(stream.name, 'exists', actual !== undefined, `${stream.stream} stream ${stream.name}`);
    if (actual)
      add(stream.name, 'queue type', actual.type === 'stream', `planned stream, broker ${actual.type}`);
  }
  const control = plan.naming.controlExchange();
  add(control, 'exists', exchanges.has(control), 'control exchange (pause, resume, processes)');
  return { ok: checks.every((c) => c.ok), checks };
}
