/**
 * A latency histogram that merges: log-spaced bins (8 per doubling, so a percentile read from it is within
 * about 4.5 % of the true value), the same bins in every process, so the histograms of several processes
 * and buckets add up bin by bin and their percentiles stay right, where averaging percentiles would not.
 * Bin 0 holds everything under 1 ms; bin b >= 1 holds [2^((b-1)/8), 2^(b/8)) ms.
 */
export const BINS_PER_DOUBLING = 8;
/** The last bin: 2^40 ms (about 35 years) and more. */
export const MAX_BIN = 320;

/** The bin of a duration in ms (NaN and negatives in bin 0). */
export function binOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  const bin = 1 + Math.floor(Math.log2(ms) * BINS_PER_DOUBLING);
  return Math.min(bin, MAX_BIN);
}

/** The value a bin stands for, ms: its geometric middle (0.5 for bin 0). */
export function binValue(bin: number): number {
  if (bin <= 0) return 0.5;
  return 2 ** ((bin - 0.5) / BINS_PER_DOUBLING);
}

/** Sparse bins as a record carries them: `[bin, count]` pairs, bins ascending. */
export type SparseBins = readonly (readonly [number, number])[];

/** Counts per bin, dense: what a process fills on its job path (one increment a job). */
export class DenseHistogram {
  private bins: Uint32Array | undefined;
  count = 0;

  add(ms: number): void {
    this.bins ??= new Uint32Array(MAX_BIN + 1);
    this.bins[binOf(ms)]! += 1;
    this.count += 1;
  }

  sparse(): [number, number][] {
    const out: [number, number][] = [];
    const bins = this.bins;
    if (bins === undefined || this.count === 0) return out;
    for (let bin = 0; bin <= MAX_BIN; bin += 1) if (bins[bin]! > 0) out.push([bin, bins[bin]!]);
    return out;
  }
}

/** Several sparse histograms added up (a reader merging processes and buckets). */
export class MergedHistogram {
  private readonly bins = new Map<number, number>();
  count = 0;

  add(sparse: SparseBins): void {
    for (const [bin, n] of sparse) {
      this.bins.set(bin, (this.bins.get(bin) ?? 0) + n);
      this.count += n;
    }
  }

  /** The bins as a record carries them, ascending. */
  sparse(): [number, number][] {
    return [...this.bins].sort(([a], [b]) => a - b);
  }

  /** The q-quantile (0 < q <= 1) in ms, or null when empty. */
  quantile(q: number): number | null {
    if (this.count === 0) return null;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (const bin of [...this.bins.keys()].sort((a, b) => a - b)) {
      seen += this.bins.get(bin)!;
      if (seen >= rank) return Math.round(binValue(bin) * 10) / 10;
    }
    return null;
  }
}
