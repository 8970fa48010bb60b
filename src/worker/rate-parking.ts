/** What parks: a delivery waiting in the owner, with its key, its job type and its partition. */
export interface Parkable {
  readonly key: string;
  readonly jobName: string | undefined;
  /** The partition it came from: the bound is per partition. */
  readonly owned: object;
}

/** What becomes of a parked key's first delivery when its time comes. */
export type ParkedDecision =
  /** it started (or was let go): the next one of its key is decided at once */
  | 'taken'
  /** no slot of the process is free: nothing more is decided until one is */
  | 'full'
  /** its key's rate still holds it: it waits until then */
  | { readonly until: number };

interface KeyLine<T> {
  readonly entries: T[];
  /** When its first entry is decided again. */
  dueAt: number;
}

/**
 * The deliveries over their key's rate that wait in the partition's owner for the key's slots
 * (docs/guide/per-key-limits.md): one line per (job type, key), started in arrival order as the key's slots
 * open, on a timer, with no trip through the broker. A delivery parks only when the key's slot it would get (the
 * one after those of the key parked before it) is within `horizonMs`, and while its partition holds fewer than
 * `bound`; the rest is re-delayed through the delay levels as before. Parked deliveries are unacked, so each
 * partition's prefetch has room for `bound` of them. Deciding costs O(lines) once a line is due, not O(parked).
 */
export class RateParking<T extends Parkable> {
  private readonly lines = new Map<string, KeyLine<T>>();
  private readonly inPartition = new Map<object, number>();
  private count = 0;
  private earliest = Number.POSITIVE_INFINITY;

  constructor(
    private readonly bound: number,
    readonly horizonMs: number,
  ) {}

  /** Deliveries parked now. */
  get size(): number {
    return this.count;
  }

  /** When the first line is due (infinity when none is parked). */
  get nextDueAt(): number {
    return this.earliest;
  }

  /** How many of the key's deliveries of the job type are parked: the next one's slot comes after theirs. */
  ofKey(jobName: string | undefined, key: string): number {
    return this.lines.get(lineId(jobName, key))?.entries.length ?? 0;
  }

  /**
   * Parks `entry` if `slotAt` (its key's slot after those parked, ms since epoch) is within the horizon and its
   * partition has room; `dueAt` is when its key may start the next job. False: re-delay it instead.
   */
  park(entry: T, slotAt: number, dueAt: number, now: number): boolean {
    if (slotAt > now + this.horizonMs) return false;
    const held = this.inPartition.get(entry.owned) ?? 0;
    if (held >= this.bound) return false;
    const id = lineId(entry.jobName, entry.key);
    let line = this.lines.get(id);
    if (line === undefined) {
      line = { entries: [], dueAt };
      this.lines.set(id, line);
      this.earliest = Math.min(this.earliest, dueAt);
    }
    line.entries.push(entry);
    this.inPartition.set(entry.owned, held + 1);
    this.count += 1;
    return true;
  }

  /**
   * Decides the first delivery of every line that is due, then the next of that line, until one waits; stops
   * deciding at the first `full` (the due lines stay due for the next call).
   */
  release(now: number, decide: (entry: T) => ParkedDecision): void {
    if (now < this.earliest) return;
    let earliest = Number.POSITIVE_INFINITY;
    let full = false;
    for (const [id, line] of this.lines) {
      while (!full && line.dueAt <= now && line.entries.length > 0) {
        const decision = decide(line.entries[0]!);
        if (decision === 'full') full = true;
        else if (decision === 'taken') this.remove(line.entries.shift()!);
        else line.dueAt = decision.until;
      }
      if (line.entries.length === 0) this.lines.delete(id);
      else earliest = Math.min(earliest, line.dueAt);
    }
    this.earliest = earliest;
  }

  /** Takes out what `gone` says is gone (its partition handed over, its channel closed) and returns it. */
  drop(gone: (entry: T) => boolean): T[] {
    const dropped: T[] = [];
    for (const [id, line] of this.lines) {
      for (let i = 0; i < line.entries.length; ) {
        const entry = line.entries[i]!;
        if (gone(entry)) {
          line.entries.splice(i, 1);
          this.remove(entry);
          dropped.push(entry);
        } else i++;
      }
      if (line.entries.length === 0) this.lines.delete(id);
    }
    return dropped;
  }

  /** Every line is decided again at the next release (a key's limit was changed at run time). */
  wakeAll(): void {
    for (const line of this.lines.values()) line.dueAt = 0;
    if (this.lines.size > 0) this.earliest = 0;
  }

  private remove(entry: T): void {
    this.count -= 1;
    const held = (this.inPartition.get(entry.owned) ?? 1) - 1;
    if (held <= 0) this.inPartition.delete(entry.owned);
    else this.inPartition.set(entry.owned, held);
  }
}

function lineId(jobName: string | undefined, key: string): string {
  return `${jobName ?? ''}\u0000${key}`;
}
