/**
 * `callers` loops running at once, each awaiting its own `call(i)` before taking the next index below
 * `total`.
 */
export async function runCallers(
  callers: number,
  total: number,
  call: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const caller = async () => {
    while (next < total) await call(next++);
  };
  await Promise.all(Array.from({ length: Math.min(callers, total) }, caller));
}
