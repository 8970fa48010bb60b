/** Polls `check` until it returns a truthy value or the deadline passes. Never a fixed sleep. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${options.timeoutMs ?? 10_000} ms waiting for ${options.what ?? 'a condition'}`,
      );
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 20));
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
