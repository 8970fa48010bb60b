import type { TopologyPlan } from '../topology';
import type { PlanEntry } from './ops-results';
import type { ProcessStatus } from '../process-control';
import type { ScheduleNotFiredReason, ScheduleOverview } from './ops-results';

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

/** A schedule the config declares (`@Cron` on its job classes) or the registry holds, with its next tick from now. */
export interface DeclaredSchedule {
  readonly id: string;
  readonly job: string;
  readonly pattern: string;
  readonly tz: string;
  readonly nextFireAt: Date;
}

/** The schedule registry as ops read it, and whether a process takes part in the cron election. */
export interface RegistryView {
  /** The registry's schedules (those with a definition). */
  readonly schedules: readonly DeclaredSchedule[];
  /** Every id the registry holds paused, registry or code. */
  readonly paused: ReadonlySet<string>;
  /** The election queue has a consumer (see scheduler/scheduler-presence.ts). */
  readonly isSchedulerRunning: boolean;
}

type Merged = Omit<ScheduleOverview, 'paused' | 'isFired' | 'notFired'>;

/**
 * Merges the schedules each process reports, by id, with those the config declares and those the
 * registry holds: who holds each, who fires it, the next tick, and whether it fires at all. A declared or
 * registry schedule no process holds shows with `heldBy: []`. Pure.
 */
export function mergeSchedules(
  processes: readonly ProcessStatus[],
  declared: readonly DeclaredSchedule[],
  registry: RegistryView,
): ScheduleOverview[] {
  const byId = new Map<string, Merged>();
  const none = { lastFiredAt: undefined, heldBy: [], firedBy: undefined };
  for (const r of registry.schedules) byId.set(r.id, { ...r, ...none, declared: false, source: 'registry' });
  for (const d of declared) byId.set(d.id, { ...d, ...none, declared: true, source: 'code' });
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
        source: earlier?.source ?? 'code',
      });
    }
  }
  const leaderAnswered = processes.some((p) => p.isLeader);
  const isRunning = registry.isSchedulerRunning || leaderAnswered;
  return [...byId.values()]
    .map((s) => {
      const paused = registry.paused.has(s.id);
      const notFired = whyNotFired(s, paused, isRunning, leaderAnswered);
      return { ...s, paused, isFired: notFired === undefined, notFired };
    })
    .sort((a, b) => a.nextFireAt.getTime() - b.nextFireAt.getTime());
}

/**
 * A registry schedule is held by every process that runs the scheduler, so a running scheduler fires it,
 * unless the leader answered without it; a code schedule fires only where the leader holds it.
 */
function whyNotFired(
  s: Merged,
  paused: boolean,
  isRunning: boolean,
  leaderAnswered: boolean,
): ScheduleNotFiredReason | undefined {
  if (paused) return 'paused';
  if (s.firedBy !== undefined) return undefined;
  if (!isRunning) return 'no-scheduler';
  if (s.source === 'registry' && !leaderAnswered) return undefined;
  return 'not-held';
}

function latest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a > b ? a : b;
}
