import type { Logger } from '../core';

/** Last fired tick (ms since epoch) per schedule id, kept on the broker for the next leader. */
export interface TickLedger {
  read(): Promise<ReadonlyMap<string, number>>;
  write(lastFired: ReadonlyMap<string, number>): Promise<void>;
}

export interface TermLedgerDeps {
  readonly ledger: TickLedger;
  readonly log: Logger;
  /** Whether `term` is still the scheduler's current leadership term. */
  readonly isCurrent: (term: number) => boolean;
  /** Whether this process leads now. */
  readonly isLeader: () => boolean;
  /** This process's own last firings, per schedule id (they may be newer than the stored ledger). */
  readonly lastFiredHere: () => Iterable<readonly [string, number]>;
}

/**
 * The cron ledger as one leadership term knows it: read once per term (merged with this process's own
 * firings of earlier terms), then advanced by the term's firings. Writes are coalesced, never precede the term's read,
 * and stop as soon as the term ends.
 */
export class TermLedger {
  private current: { term: number; loaded: Promise<Map<string, number>> } | undefined;
  private isDirty = false;
  private isWriting = false;

  constructor(private readonly deps: TermLedgerDeps) {}

  /** The ledger of `term`, read from the broker on first use in the term. */
  of(term: number): Promise<Map<string, number>> {
    if (this.current?.term !== term) {
      // This process's firings before the term began: one of this term that fires while the read is still
      // out (a slow broker) must not pass for the last tick a leader fired, or the missed tick never fires.
      const firedBefore = [...this.deps.lastFiredHere()];
      const loaded = this.deps.ledger.read().then(
        (stored) => {
          const merged = new Map(stored);
          for (const [id, lastFiredAt] of firedBefore) {
            if (lastFiredAt > (merged.get(id) ?? -Infinity)) merged.set(id, lastFiredAt);
          }
          return merged;
        },
        (error: unknown) => {
          this.deps.log.warn(
            { err: error },
            'could not read the cron ledger; ticks missed before this takeover are skipped',
          );
          return new Map<string, number>();
        },
      );
      this.current = { term, loaded };
    }
    return this.current.loaded;
  }

  /** Leadership ended: the next term reads the ledger again. */
  forget(): void {
    this.current = undefined;
  }

  /** Advances the ledger; writes are coalesced, and never precede this term's read of it. */
  async record(id: string, fireAt: number, term: number): Promise<void> {
    if (!this.deps.isCurrent(term)) return;
    const ledger = await this.of(term);
    if (!this.deps.isCurrent(term)) return;
    if ((ledger.get(id) ?? -Infinity) >= fireAt) return;
    ledger.set(id, fireAt);
    this.isDirty = true;
    if (this.isWriting) return;
    this.isWriting = true;
    try {
      while (this.isDirty && this.deps.isCurrent(term) && this.deps.isLeader()) {
        this.isDirty = false;
        await this.deps.ledger.write(new Map(ledger));
      }
    } catch (error) {
      this.deps.log.warn(
        { err: error },
        'could not write the cron ledger; the next leader may fire the last tick again (same job id)',
      );
    } finally {
      this.isWriting = false;
    }
  }
}
