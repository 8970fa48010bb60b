import type { ProofOrigin } from './record-proof';

/** Sequence numbers remembered below a writer's highest, per writer: a late record within them is accepted once. */
const WINDOW = 4096;
/** Writers remembered by one reader; the first seen are forgotten past this. */
const MAX_WRITERS = 10_000;

interface WriterState {
  max: number;
  readonly seen: Set<number>;
}

/**
 * A reader's memory of the (writer, seq) pairs it applied: each is applied once, so a genuine record
 * appended again (byte for byte, proof included) is not. A writer's records come in order on one
 * channel, but a retried publish may land after later ones: a window of WINDOW sequence numbers below the
 * highest is accepted once each; older ones are replays. Only records whose proof verified come here, so
 * the writers are warren's own processes.
 */
export class ReplayGuard {
  private readonly writers = new Map<string, WriterState>();

  /** True the first time this (writer, seq) is offered; false for a replay. */
  accept(origin: ProofOrigin): boolean {
    const { writer, seq } = origin;
    let state = this.writers.get(writer);
    if (state === undefined) {
      // the writer seen first goes first: processes come and go, the oldest is the likeliest gone
      if (this.writers.size >= MAX_WRITERS) this.writers.delete(this.writers.keys().next().value as string);
      state = { max: 0, seen: new Set() };
      this.writers.set(writer, state);
    }
    if (seq <= state.max - WINDOW || state.seen.has(seq)) return false;
    state.seen.add(seq);
    if (seq > state.max) {
      state.max = seq;
      if (state.seen.size > 2 * WINDOW)
        for (const s of state.seen) if (s <= seq - WINDOW) state.seen.delete(s);
    }
    return true;
  }
}
