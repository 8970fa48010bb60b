/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function sortedCopy(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values).sort();
}

export interface Spread {
  min: number;
  median: number;
  max: number;
}

/** The lower middle of an ascending-sorted array: with an even count, still a value that was measured. */
function lowerMiddle(sorted: readonly number[]): number {
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** The median; with an even count the lower middle value, so it is always a value that was measured. */
export function median(values: readonly number[]): number {
  return lowerMiddle([...values].sort((a, b) => a - b));
}

/** The smallest, the median (as `median` takes it) and the largest value. */
export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0], median: lowerMiddle(sorted), max: sorted[sorted.length - 1] };
}
