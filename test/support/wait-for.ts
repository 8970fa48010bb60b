/**
 * The one way tests wait: on a condition (`waitFor`) or an event (`nextEvent`), always with a deadline.
 *
 * A test that must show something did NOT happen waits for the signal that marks the point after which it
 * would have happened (a later job on the same queue, the dead letter, a confirm), then asserts; never a
 * fixed sleep. The only deliberate passage of time is `passTime`, for when time itself is the point.
 */

/** Polls `check` until it returns a truthy value or the deadline passes. Never a fixed sleep. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  options: {
    timeoutMs?: number;
    intervalMs?: number;
    /** What is awaited, for the timeout message; a function is read at the timeout (e.g. the last value). */
    what?: string | (() => string);
  } = {},
): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      const what = typeof options.what === 'function' ? options.what() : options.what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what ?? 'a condition'}`);
    }
    await pollInterval(options.intervalMs ?? 20);
  }
}

/** Resolves with the first emission of `event` that satisfies `match`, or rejects after the deadline. */
export function nextEvent<T>(
  emitter: {
    on(event: string, listener: (arg: T) => void): unknown;
    off(event: string, listener: (arg: T) => void): unknown;
  },
  event: string,
  match: (arg: T) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for event '${event}'`));
    }, timeoutMs);
    const listener = (arg: T) => {
      if (!match(arg)) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(arg);
    };
    emitter.on(event, listener);
  });
}

/**
 * Lets `ms` of wall-clock time pass on purpose, for the few places where time is the thing itself: a
 * handler that simulates work (so jobs overlap, outlast a timeout or a shutdown), a publisher paced to a
 * steady rate, a fault held for a set duration, a measurement window (runs per second over ten seconds, a
 * gap with no process running cron). With `signal`, rejects with its reason when it aborts (a
 * handler's `ctx.signal`). Never use it to wait for something to happen or to show it did not: use
 * `waitFor` or `nextEvent`.
 */
export function passTime(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Lets time pass until the wall clock is half-way through a second (400–600 ms in), for tests around a
 * cron that fires every second: a process killed then leaves no doubt which tick was under way. The clock
 * is the point here, not a condition to wait for.
 */
export async function passTimeToMidSecond(): Promise<void> {
  // A loaded machine may wake us late, past the window: aim again at the next second, a few times.
  for (let attempt = 0; attempt < 5; attempt++) {
    const intoSecond = Date.now() % 1000;
    if (intoSecond >= 400 && intoSecond < 600) return;
    await passTime((1450 - intoSecond) % 1000);
  }
  throw new Error('the clock was never half-way through a second: woken too late five times');
}

function pollInterval(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
