/**
 * The bookkeeping of a fault scenario: which job ids were published, which the broker confirmed,
 * which publishes failed (and with which error code), and how often each id actually ran. Counts
 * come from what ran (a handler's report), never from what should have happened.
 *
 * At the end a scenario prints its row of the figures table as one JSON line prefixed `FAULT-ROW`:
 * published, confirmed, completed (confirmed ids that ran), duplicates (ids that ran more than once),
 * lost (confirmed ids that never ran: must be 0) and the time to recover.
 */
import { WarrenError } from '../../src';

/** One line of the figures table. */
export interface FaultRow {
  readonly scenario: string;
  /** Publishes attempted (each with its own job id). */
  readonly published: number;
  /** Publishes the broker confirmed. */
  readonly confirmed: number;
  /** Confirmed job ids that ran to completion at least once. */
  readonly completed: number;
  /** Job ids (confirmed or not) that ran to completion more than once. */
  readonly duplicates: number;
  /** Confirmed job ids that never ran. The guarantee: 0. */
  readonly lost: number;
  /** Publishes that failed, by error code (a caller saw each of these fail: none was silent). */
  readonly failedPublishes: Readonly<Record<string, number>>;
  /** Publishes that failed (timed out after being sent) but whose job ran anyway: at-least-once. */
  readonly unconfirmedButRan: number;
  /** Time from the end of the fault until the system was working again; `recovery` says what was measured. */
  readonly recoveryMs: number | undefined;
  readonly recovery: string;
  /** Wall time of the scenario. */
  readonly durationMs: number;
  readonly [extra: string]: unknown;
}

export class FaultLedger {
  private readonly attempted = new Set<string>();
  private readonly confirmedIds = new Set<string>();
  private readonly failures = new Map<string, string>();
  private readonly runs = new Map<string, number>();
  private readonly confirmTimes: number[] = [];
  private readonly runTimes: number[] = [];
  private readonly started = Date.now();

  constructor(readonly scenario: string) {}

  /** Tracks one publish: call before it is sent, with the promise the publish returned. */
  track(id: string, publishing: Promise<unknown>): Promise<boolean> {
    if (this.attempted.has(id)) throw new Error(`job id '${id}' published twice by the test`);
    this.attempted.add(id);
    return publishing.then(
      () => {
        this.confirmedIds.add(id);
        this.confirmTimes.push(Date.now());
        return true;
      },
      (error: unknown) => {
        this.failures.set(
          id,
          error instanceof WarrenError
            ? error.code
            : `untyped ${String((error as Error)?.name ?? error)}: ${String((error as Error)?.message ?? '')}`,
        );
        return false;
      },
    );
  }

  /** Records a completed run of `id` (a handler finished it). */
  ran(id: string): void {
    this.runs.set(id, (this.runs.get(id) ?? 0) + 1);
    this.runTimes.push(Date.now());
  }

  /** When the first publish confirmed at or after `time` was confirmed (ms since epoch), if any. */
  firstConfirmAfter(time: number): number | undefined {
    return this.confirmTimes.find((t) => t >= time);
  }

  /**
   * The longest stretch without a confirm between `from` and `to` (ms since epoch): how long
   * publishers were held up by a fault, however they got through it (waiting, nacks retried, a reconnect).
   */
  longestConfirmGap(from: number, to: number): number {
    let previous = from;
    let longest = 0;
    for (const t of this.confirmTimes) {
      if (t < from) continue;
      if (t > to) break;
      longest = Math.max(longest, t - previous);
      previous = t;
    }
    return Math.max(longest, Math.min(to, Date.now()) - previous);
  }

  /** When the first run completed at or after `time` completed (ms since epoch), if any. */
  firstRunAfter(time: number): number | undefined {
    return this.runTimes.find((t) => t >= time);
  }

  get published(): number {
    return this.attempted.size;
  }

  get confirmed(): number {
    return this.confirmedIds.size;
  }

  get confirmedJobIds(): ReadonlySet<string> {
    return this.confirmedIds;
  }

  /** Failed publishes by error code. */
  get failedByCode(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const code of this.failures.values()) counts[code] = (counts[code] ?? 0) + 1;
    return counts;
  }

  /** How often `id` ran to completion. */
  runsOf(id: string): number {
    return this.runs.get(id) ?? 0;
  }

  /** Confirmed ids that have not run yet. */
  missing(): string[] {
    return [...this.confirmedIds].filter((id) => !this.runs.has(id));
  }

  /** True once every confirmed id ran at least once (poll it with waitFor). */
  allConfirmedRan(): boolean {
    for (const id of this.confirmedIds) if (!this.runs.has(id)) return false;
    return true;
  }

  /** Ids that ran more than once. */
  duplicateIds(): string[] {
    return [...this.runs].filter(([, n]) => n > 1).map(([id]) => id);
  }

  /** Ids that ran although the test never published them: a sign the counts are wrong. */
  strangers(): string[] {
    return [...this.runs.keys()].filter((id) => !this.attempted.has(id));
  }

  /** Builds the row, prints it as `FAULT-ROW {json}` and returns it. */
  report(
    recoveryMs: number | undefined,
    recovery: string,
    extra: Readonly<Record<string, unknown>> = {},
  ): FaultRow {
    const completed = [...this.confirmedIds].filter((id) => this.runs.has(id)).length;
    const row: FaultRow = {
      scenario: this.scenario,
      published: this.published,
      confirmed: this.confirmed,
      completed,
      duplicates: this.duplicateIds().length,
      lost: this.confirmed - completed,
      failedPublishes: this.failedByCode,
      unconfirmedButRan: [...this.failures.keys()].filter((id) => this.runs.has(id)).length,
      recoveryMs: recoveryMs === undefined ? undefined : Math.round(recoveryMs),
      recovery,
      durationMs: Date.now() - this.started,
      ...extra,
    };
    console.log(`FAULT-ROW ${JSON.stringify(row)}`);
    return row;
  }
}
