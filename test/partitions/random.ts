/**
 * A seeded random number generator (mulberry32): the partition suite draws its nemesis schedule and each
 * workload process its publishes from a seed, so a seed number reproduces a run's schedule.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A random integer in [0, n). */
export function randomIndex(random: () => number, n: number): number {
  return Math.floor(random() * n);
}

/** A shuffled copy of `items`. */
export function shuffled<T>(random: () => number, items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = randomIndex(random, i + 1);
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
