/** The start times of one key within its window, oldest first (a ring that only grows to `max`). */
export class StartLog {
  private times: number[] = [];
  private head = 0;

  count(now: number, durationMs: number): number {
    this.prune(now, durationMs);
    return this.times.length - this.head;
  }

  /** When the oldest start in the window leaves it: the next start's earliest time at the cap. */
  oldestExpiry(durationMs: number): number {
    return (this.times[this.head] ?? 0) + durationMs;
  }

  add(now: number): void {
    this.times.push(now);
  }

  /**
   * The key's `n`th next slot (0: the first), at `max` starts per window: the start `max` back from the newest
   * frees a slot one window after it, and so on round the window. A saturated key whose jobs start on their
   * slots keeps this pattern, bursts included, so the slots a backlog is sent back for are the ones that free.
   */
  slot(n: number, max: number, now: number, durationMs: number): number {
    this.prune(now, durationMs);
    const live = this.times.length - this.head;
    if (live === 0) return now;
    const m = Math.min(max, live);
    const first = this.times.length - m;
    return this.times[first + (n % m)]! + (Math.floor(n / m) + 1) * durationMs;
  }

  /** The index of the first of the key's next slots (see `slot`) at or after `at`: O(max). */
  firstSlotAtOrAfter(at: number, max: number, now: number, durationMs: number): number {
    this.prune(now, durationMs);
    const live = this.times.length - this.head;
    if (live === 0) return 0;
    const m = Math.min(max, live);
    const newest = this.times[this.times.length - 1]!;
    // the windows of slots wholly before `at` (window k's slots are the log's times + (k + 1) windows)
    let n = Math.max(0, Math.ceil((at - newest) / durationMs) - 1) * m;
    while (this.slot(n, max, now, durationMs) < at) n++;
    return n;
  }

  isIdle(now: number, durationMs: number): boolean {
    return this.count(now, durationMs) === 0;
  }

  private prune(now: number, durationMs: number): void {
    const times = this.times;
    while (this.head < times.length && times[this.head]! <= now - durationMs) this.head++;
    if (this.head > 64 && this.head * 2 > times.length) {
      this.times = times.slice(this.head);
      this.head = 0;
    }
  }

  /** How many of the next slots up to index `n` share its time (1: itself alone): its place in a burst. */
  sameBefore(n: number, max: number, now: number, durationMs: number): number {
    const at = this.slot(n, max, now, durationMs);
    let same = 1;
    while (n - same >= 0 && this.slot(n - same, max, now, durationMs) === at) same++;
    return same;
  }
}
