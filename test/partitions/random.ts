import { prng } from '../integration/fuzz-messages';

/**
 * A seeded random number generator (the fuzz tests' mulberry32): the partition suite draws its nemesis schedule and each
 * workload process its publishes from a seed, so a seed number reproduces a run's schedule.
 */
export const seededRandom: (seed: number) => () => number = prng;

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
