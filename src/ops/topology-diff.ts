import {
  sideStreamsOf,
  type PlannedBinding,
  type PlannedExchange,
  type PlannedQueue,
  type TopologyPlan,
} from '../topology';
import type { BrokerBinding, BrokerExchange, BrokerQueue, BrokerState } from './management-api';

export type DriftKind = 'missing' | 'extra' | 'different';

/** One difference between the plan and the broker. */
export interface Drift {
  readonly kind: DriftKind;
  readonly entity: 'queue' | 'exchange' | 'binding';
  /** The entity's name; for a binding `source -> destination 'pattern'`. */
  readonly name: string;
  /** For `different`: each differing setting, `setting: planned X, broker Y`. */
  readonly differences: readonly string[];
}

export interface TopologyDiff {
  /** No drift at all. */
  readonly inSync: boolean;
  readonly drift: readonly Drift[];
}

/**
 * Compares the plan with what the broker has. Missing and different cover everything in the plan;
 * `extra` covers the broker's entities that belong to the plan's namespace (every non-`amq.` entity
 * when the namespace is empty) and are not in the plan, leaving out state that is not topology:
 * exclusive queues (each process's control queue), operator pause markers and the removal marker. Pure.
 */
export function diffTopology(plan: TopologyPlan, broker: BrokerState): TopologyDiff {
  const drift: Drift[] = [];
  const ours = (name: string) => belongsTo(plan, name);
  const queues = new Map(broker.queues.map((q) => [q.name, q]));
  const exchanges = new Map(broker.exchanges.map((e) => [e.name, e]));
  for (const planned of plan.exchanges) {
    const actual = exchanges.get(planned.name);
    if (!actual) drift.push({ kind: 'missing', entity: 'exchange', name: planned.name, differences: [] });
    else pushDifferent(drift, 'exchange', planned.name, exchangeDifferences(planned, actual));
  }
  for (const planned of plan.queues) {
    const actual = queues.get(planned.name);
    if (!actual) drift.push({ kind: 'missing', entity: 'queue', name: planned.name, differences: [] });
    else pushDifferent(drift, 'queue', planned.name, queueDifferences(planned, actual));
  }
  // the indexes beside a planned history or dead-letter log are declared on first use, not planned
  const plannedNames = new Set([
    ...[...plan.queues, ...plan.exchanges].map((e) => e.name),
    ...sideStreamsOf(plan),
  ]);
  for (const e of broker.exchanges)
    if (ours(e.name) && !plannedNames.has(e.name))
      drift.push({ kind: 'extra', entity: 'exchange', name: e.name, differences: [] });
  for (const q of broker.queues)
    if (
      ours(q.name) &&
      !q.exclusive &&
      !plan.naming.isPauseMarker(q.name) &&
      q.name !== plan.naming.removalMarker() &&
      !plannedNames.has(q.name)
    )
      drift.push({ kind: 'extra', entity: 'queue', name: q.name, differences: [] });

  const plannedBindings = new Set(plan.bindings.map(bindingKey));
  const brokerBindings = new Set(broker.bindings.map(bindingKey));
  for (const b of plan.bindings)
    if (!brokerBindings.has(bindingKey(b)))
      drift.push({ kind: 'missing', entity: 'binding', name: bindingName(b), differences: [] });
  const exclusive = new Set(broker.queues.filter((q) => q.exclusive).map((q) => q.name));
  for (const b of broker.bindings)
    if (ours(b.source) && ours(b.destination) && !exclusive.has(b.destination))
      if (!plannedBindings.has(bindingKey(b)))
        drift.push({ kind: 'extra', entity: 'binding', name: bindingName(b), differences: [] });
  return { inSync: drift.length === 0, drift };
}

/** Whether a broker entity name falls in the plan's namespace. */
export function belongsTo(plan: TopologyPlan, name: string): boolean {
  if (name === '' || name.startsWith('amq.')) return false;
  const ns = plan.naming.namespace;
  return ns === '' || name.startsWith(`${ns}.`);
}

export function bindingKey(b: PlannedBinding | BrokerBinding): string {
  return `${b.source}\u0000${b.destinationType}\u0000${b.destination}\u0000${b.pattern}`;
}

export function bindingName(b: PlannedBinding | BrokerBinding): string {
  return `${b.source} -> ${b.destination} '${b.pattern}'`;
}

function pushDifferent(drift: Drift[], entity: Drift['entity'], name: string, differences: string[]): void {
  if (differences.length > 0) drift.push({ kind: 'different', entity, name, differences });
}

function queueDifferences(planned: PlannedQueue, actual: BrokerQueue): string[] {
  const out: string[] = [];
  compare(out, 'type', planned.type, actual.type);
  compare(out, 'durable', planned.assertion.durable, actual.durable);
  compareArguments(out, planned.assertion.arguments, actual.arguments);
  return out;
}

function exchangeDifferences(planned: PlannedExchange, actual: BrokerExchange): string[] {
  const out: string[] = [];
  compare(out, 'type', planned.type, actual.type);
  compare(out, 'durable', planned.durable, actual.durable);
  compare(out, 'autoDelete', planned.autoDelete, actual.autoDelete);
  compare(out, 'internal', planned.internal, actual.internal);
  compareArguments(out, planned.arguments, actual.arguments);
  return out;
}

function compareArguments(
  out: string[],
  planned: Readonly<Record<string, unknown>>,
  actual: Readonly<Record<string, unknown>>,
): void {
  for (const key of new Set([...Object.keys(planned), ...Object.keys(actual)]))
    compare(out, key, planned[key], actual[key]);
}

function compare(out: string[], setting: string, planned: unknown, actual: unknown): void {
  if (JSON.stringify(planned) !== JSON.stringify(actual))
    out.push(`${setting}: planned ${show(planned)}, broker ${show(actual)}`);
}

function show(value: unknown): string {
  return value === undefined ? '(none)' : JSON.stringify(value);
}
