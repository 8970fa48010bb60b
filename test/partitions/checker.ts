/**
 * The partition suite's checker: reads a run's history (after the heal and the drain) and gives the verdicts
 * of issue 40. Pure: the same history gives the same verdicts.
 *
 * - lost: a job whose publish was confirmed, or whose outbox row committed, that neither completed nor lies in
 *   dead letters with a reason. Must be none.
 * - duplicates: a job (or a cron tick) that ran to completion more than once, i.e. a copy the idempotency key
 *   did not catch. Copies it caught (`duplicate` events) are counted, not faults: at-least-once allows them.
 * - double ticks: a cron tick that ran more than once (the same rule for the ticks, reported apart).
 * - early: an attempt of a delayed job that started before the job's due time by the checker's clock.
 * - stuck: a job queue or delay level still holding messages after the drain: ready ones (the message count
 *   a declaration reports) or, read from the quorum queue's leader, ones checked out to a consumer or
 *   dead-lettered and not yet handed on, which that count leaves out.
 * - dead letters without a reason, and completions of ids nobody published (a sign the counts are wrong).
 *
 * {@link plantFaults} doctors a real history with one fault of each kind; a run's verdicts count only when the
 * checker catches all of them in its own history (see run.ts).
 */
import type { HistoryEvent, HistoryEventOf, JobKind } from './history';

export interface Verdicts {
  readonly lost: readonly string[];
  readonly duplicates: readonly string[];
  readonly doubleTicks: readonly string[];
  readonly early: readonly { readonly id: string; readonly earlyByMs: number }[];
  readonly stuck: readonly { readonly queue: string; readonly messages: number }[];
  readonly deadWithoutReason: readonly string[];
  readonly strangers: readonly string[];
  /** Whether the history holds the drain's reading of the broker (dead letters, queue depths). */
  readonly drained: boolean;
  readonly ok: boolean;
}

export interface RunCounts {
  readonly published: number;
  readonly confirmed: number;
  readonly failedPublishes: Readonly<Record<string, number>>;
  readonly unconfirmedButRan: number;
  readonly outboxCommitted: number;
  readonly completed: number;
  readonly deadLettered: Readonly<Record<string, number>>;
  /** dead letters of jobs not meant to die (kind plain, retry, delayed, outbox), by reason */
  readonly unexpectedDead: Readonly<Record<string, number>>;
  readonly retries: number;
  readonly duplicatesCaught: number;
  readonly ticks: number;
  readonly leaderChanges: number;
  readonly reconnects: number;
  readonly nemesisOps: number;
  readonly maxLoad1: number;
}

export interface CheckResult {
  readonly verdicts: Verdicts;
  readonly counts: RunCounts;
}

function group<E extends HistoryEvent['e']>(history: readonly HistoryEvent[], e: E): HistoryEventOf<E>[] {
  return history.filter((event): event is HistoryEventOf<E> => event.e === e);
}

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

function timesSeen(ids: readonly string[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  return seen;
}

export function check(history: readonly HistoryEvent[]): CheckResult {
  const kinds = new Map<string, JobKind>();
  const dueAt = new Map<string, number>();
  for (const event of group(history, 'publish')) {
    kinds.set(event.id, event.kind);
    if (event.dueAt !== undefined) dueAt.set(event.id, event.dueAt);
  }
  const committed = group(history, 'outbox-committed');
  for (const event of committed) kinds.set(event.id, event.kind);
  const confirmed = new Set([...group(history, 'confirmed').map((c) => c.id), ...committed.map((c) => c.id)]);
  const completions = timesSeen(group(history, 'complete').map((c) => c.id));
  const letters = group(history, 'dead-letter');
  const dead = new Set(letters.filter((l) => l.reason !== '').map((l) => l.id));
  const ticks = timesSeen(group(history, 'tick').map((t) => t.id));
  const failed = new Map(group(history, 'publish-failed').map((f) => [f.id, f.code]));
  const depths = group(history, 'queue-depth');

  const early: { id: string; earlyByMs: number }[] = [];
  for (const start of group(history, 'start')) {
    const due = dueAt.get(start.id);
    if (due !== undefined && start.t < due) early.push({ id: start.id, earlyByMs: due - start.t });
  }
  const verdicts = {
    lost: [...confirmed].filter((id) => !completions.has(id) && !dead.has(id)),
    duplicates: [...completions].filter(([, n]) => n > 1).map(([id]) => id),
    doubleTicks: [...ticks].filter(([, n]) => n > 1).map(([id]) => id),
    early,
    stuck: [
      ...depths
        .filter((d) => (d.role === 'job' || d.role === 'delay') && d.messages > 0)
        .map((d) => ({ queue: d.queue, messages: d.messages })),
      ...group(history, 'queue-held').flatMap((h) => {
        const held = [h.checkedOut, h.deadLetterWaiting, h.deadLetterUnconfirmed].filter((n) => n > 0);
        const messages = held.reduce((a, b) => a + b, 0);
        return (h.role === 'job' || h.role === 'delay') && messages > 0
          ? [
              {
                queue: `${h.queue} (checked out ${h.checkedOut}, dead-lettered and waiting ${h.deadLetterWaiting}, unconfirmed ${h.deadLetterUnconfirmed})`,
                messages,
              },
            ]
          : [];
      }),
    ],
    deadWithoutReason: letters.filter((l) => l.reason === '').map((l) => l.id),
    strangers: [...completions.keys()].filter((id) => !kinds.has(id)),
    drained: depths.length > 0,
  };
  const ok =
    verdicts.drained &&
    [
      verdicts.lost,
      verdicts.duplicates,
      verdicts.doubleTicks,
      verdicts.early,
      verdicts.stuck,
      verdicts.deadWithoutReason,
      verdicts.strangers,
    ].every((list) => list.length === 0);
  const expectedToDie = (id: string) => kinds.get(id) === 'dead' || kinds.get(id) === 'poison';
  const connected = group(history, 'connected');
  const counts: RunCounts = {
    published: group(history, 'publish').length + group(history, 'outbox-failed').length + committed.length,
    confirmed: confirmed.size,
    failedPublishes: countBy([
      ...failed.values(),
      ...group(history, 'outbox-failed').map((f) => `outbox ${f.code}`),
    ]),
    unconfirmedButRan: [...failed.keys()].filter((id) => completions.has(id) || dead.has(id)).length,
    outboxCommitted: committed.length,
    completed: [...confirmed].filter((id) => completions.has(id)).length,
    deadLettered: countBy(letters.map((l) => l.reason)),
    unexpectedDead: countBy(letters.filter((l) => !expectedToDie(l.id)).map((l) => l.reason)),
    retries: group(history, 'retried').length,
    duplicatesCaught: group(history, 'duplicate').length,
    ticks: ticks.size,
    leaderChanges: group(history, 'leader').filter((l) => l.isLeader).length,
    reconnects: Math.max(0, connected.length - new Set(connected.map((c) => c.p)).size),
    nemesisOps: group(history, 'nemesis').length,
    maxLoad1: Math.max(0, ...group(history, 'load').map((l) => l.load1)),
  };
  return { verdicts: { ...verdicts, ok }, counts };
}

/** The faults {@link plantFaults} plants, each with the verdict that must catch it. */
export const PLANTED = ['loss', 'duplicate', 'early', 'double tick'] as const;
export type PlantedFault = (typeof PLANTED)[number];

/**
 * A copy of `history` doctored with `fault`: a completed job's completion removed (loss), a completion
 * repeated (duplicate), a delayed job's start moved before its due time (early), a tick run twice. Undefined
 * when the history has nothing to doctor for that fault (e.g. no delayed job).
 */
export function plantFault(
  history: readonly HistoryEvent[],
  fault: PlantedFault,
): HistoryEvent[] | undefined {
  const completed = group(history, 'complete');
  const dead = new Set(group(history, 'dead-letter').map((l) => l.id));
  switch (fault) {
    case 'loss': {
      const victim = completed.find((c) => !dead.has(c.id));
      return victim && history.filter((e) => !(e.e === 'complete' && e.id === victim.id));
    }
    case 'duplicate': {
      const victim = completed[0];
      return victim && [...history, { ...victim, t: victim.t + 1 }];
    }
    case 'early': {
      const due = new Map(
        group(history, 'publish').flatMap((p) => (p.dueAt === undefined ? [] : [[p.id, p.dueAt] as const])),
      );
      const victim = group(history, 'start').find((s) => due.has(s.id));
      if (!victim) return undefined;
      return history.map((e) => (e === victim ? { ...victim, t: due.get(victim.id)! - 500 } : e));
    }
    case 'double tick': {
      const victim = group(history, 'tick')[0];
      return victim && [...history, { ...victim, t: victim.t + 1 }];
    }
  }
}

/** Whether the checker flags `fault` in a history doctored with it. */
export function catches(verdicts: Verdicts, fault: PlantedFault): boolean {
  switch (fault) {
    case 'loss':
      return verdicts.lost.length > 0;
    case 'duplicate':
      return verdicts.duplicates.length > 0;
    case 'early':
      return verdicts.early.length > 0;
    case 'double tick':
      return verdicts.doubleTicks.length > 0;
  }
}

/** Plants each fault in `history` and checks it: the faults caught, and the ones that could not be planted. */
export function selfTest(history: readonly HistoryEvent[]): {
  readonly caught: readonly PlantedFault[];
  readonly missed: readonly PlantedFault[];
  readonly notPlantable: readonly PlantedFault[];
} {
  const caught: PlantedFault[] = [];
  const missed: PlantedFault[] = [];
  const notPlantable: PlantedFault[] = [];
  for (const fault of PLANTED) {
    const doctored = plantFault(history, fault);
    if (!doctored) notPlantable.push(fault);
    else if (catches(check(doctored).verdicts, fault)) caught.push(fault);
    else missed.push(fault);
  }
  return { caught, missed, notPlantable };
}
