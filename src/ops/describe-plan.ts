import type { TopologyPlan } from '../topology';
import type { PlanEntry } from './ops-results';
import type { ProcessStatus } from '../process-control';
import type { ScheduleOverview } from './ops-results';

/** The plan as rows: every exchange, queue and binding warren declares, with its settings. Pure. */
export function describePlan(plan: TopologyPlan): PlanEntry[] {
  const args = (a: Readonly<Record<string, unknown>>) =>
    Object.entries(a)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(' ');
  return [
    ...plan.exchanges.map((e) => ({
      entity: 'exchange' as const,
      name: e.name,
      settings: [e.type, e.durable ? 'durable' : 'transient', e.internal ? 'internal' : '', args(e.arguments)]
        .filter(Boolean)
        .join(' '),
    })),
    ...plan.queues.map((q) => ({
      entity: 'queue' as const,
      name: q.name,
      settings: [q.role, q.assertion.durable ? 'durable' : 'transient', args(q.assertion.arguments)]
        .filter(Boolean)
        .join(' '),
    })),
    ...plan.bindings.map((b) => ({
      entity: 'binding' as const,
      name: `${b.source} -> ${b.destination}`,
      settings: `pattern '${b.pattern}'`,
    })),
  ];
}

/** A schedule the config declares (`@Cron` on its job classes), with its next tick from now. */
export interface DeclaredSchedule {
  readonly id: string;
  readonly job: string;
  readonly pattern: string;
  readonly tz: string;
  readonly nextFireAt: Date;
}

/**
 * Merges the schedules each process reports, by id, with those the config declares: who holds each,
 * who fires it, the next tick. A declared schedule no process holds shows with `heldBy: []`. Pure.
 */
export function mergeSchedules(
  processes: readonly ProcessStatus[],
  declared: readonly DeclaredSchedule[] = [],
): ScheduleOverview[] {
  const byId = new Map<string, ScheduleOverview>();
  for (const d of declared)
    byId.set(d.id, { ...d, lastFiredAt: undefined, heldBy: [], firedBy: undefined, declared: true });
  for (const p of processes) {
    for (const s of p.schedules) {
      const earlier = byId.get(s.id);
      const held = earlier !== undefined && earlier.heldBy.length > 0;
      const next = new Date(s.nextFireAt);
      const last = s.lastFiredAt ? new Date(s.lastFiredAt) : undefined;
      byId.set(s.id, {
        id: s.id,
        job: s.job,
        pattern: s.pattern,
        tz: s.tz,
        nextFireAt: held && earlier.nextFireAt < next ? earlier.nextFireAt : next,
        lastFiredAt: latest(earlier?.lastFiredAt, last),
        heldBy: [...(earlier?.heldBy ?? []), p.id],
        firedBy: p.isLeader ? p.id : earlier?.firedBy,
        declared: earlier?.declared ?? false,
      });
    }
  }
  return [...byId.values()].sort((a, b) => a.nextFireAt.getTime() - b.nextFireAt.getTime());
}

function latest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a > b ? a : b;
}
