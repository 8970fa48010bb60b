import type { ProofOrigin } from './record-proof';

/** Sequence numbers remembered below a writer's highest, per writer: a late record within them is accepted once. */
const WINDOW = 4096;
/** Writers remembered by one reader; the first seen are forgotten past this. */
const MAX_WRITERS = 10_000;

/**
 * A guard's memory as a checkpoint keeps it: per writer its highest seq and the seqs seen within the
 * window below it, as [from, to] runs (a writer's seqs come nearly in order, so a few runs say it all).
 */
export type GuardSnapshot = readonly (readonly [
  writer: string,
  max: number,
  runs: readonly (readonly [number, number])[],
])[];

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

  snapshot(): GuardSnapshot {
    return [...this.writers].map(([writer, state]) => {
      const seen = [...state.seen].filter((s) => s > state.max - WINDOW).sort((a, b) => a - b);
      const runs: [number, number][] = [];
      for (const seq of seen) {
        const last = runs.at(-1);
        if (last !== undefined && last[1] === seq - 1) last[1] = seq;
        else runs.push([seq, seq]);
      }
      return [writer, state.max, runs] as const;
    });
  }

  /**
   * Takes a checkpoint's memory (merged into what this guard saw). A snapshot of the wrong shape is
   * ignored whole: the caller read the checkpoint from a stream and has checked its proof, not its bounds.
   */
  restore(snapshot: unknown): boolean {
    if (!isGuardSnapshot(snapshot)) return false;
    for (const [writer, max, runs] of snapshot) {
      if (this.writers.size >= MAX_WRITERS && !this.writers.has(writer)) break;
      const state = this.writers.get(writer) ?? { max: 0, seen: new Set<number>() };
      state.max = Math.max(state.max, max);
      for (const [from, to] of runs)
        for (let seq = Math.max(from, max - WINDOW + 1); seq <= to; seq++) state.seen.add(seq);
      this.writers.set(writer, state);
    }
    return true;
  }
}

function isGuardSnapshot(value: unknown): value is GuardSnapshot {
  const isSeq = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
  return (
    Array.isArray(value) &&
    value.length <= MAX_WRITERS &&
    value.every(
      (w) =>
        Array.isArray(w) &&
        w.length === 3 &&
        typeof w[0] === 'string' &&
        w[0].length <= 64 &&
        isSeq(w[1]) &&
        Array.isArray(w[2]) &&
        w[2].length <= WINDOW &&
        w[2].every(
          (r: unknown) =>
            Array.isArray(r) && r.length === 2 && isSeq(r[0]) && isSeq(r[1]) && r[0] <= r[1] && r[1] <= w[1],
        ),
    )
  );
}
