/**
 * The processor of the isolates suite: no warren import, so that an isolate starts as fast as the runtime
 * lets it. `echo` returns its payload's size, `burn` spins the CPU for `ms`, `loop` never ends.
 */
export function burn(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  return x;
}

export function handle(data: { mode: 'echo' | 'burn' | 'loop'; ms?: number; body?: string }): unknown {
  if (data.mode === 'echo') return data.body?.length ?? 0;
  if (data.mode === 'burn') return burn(data.ms ?? 25);
  for (;;) {}
}
