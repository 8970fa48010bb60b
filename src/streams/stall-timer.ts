/**
 * A timeout for a read that may be long but must not be stuck: it rejects only when `progress()` (records
 * read so far) has not moved for a whole `timeoutMs`. A start behind a million records takes as long as
 * reading them takes; a read that stopped fails as before.
 */
export function rejectWhenStalled(
  progress: () => number,
  timeoutMs: number,
  error: () => Error,
): { readonly stalled: Promise<never>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let last = progress();
  const stalled = new Promise<never>((_, reject) => {
    const check = () => {
      const now = progress();
      if (now === last) return reject(error());
      last = now;
      timer = setTimeout(check, timeoutMs);
      timer.unref();
    };
    timer = setTimeout(check, timeoutMs);
    timer.unref();
  });
  stalled.catch(() => undefined);
  return { stalled, cancel: () => clearTimeout(timer) };
}
