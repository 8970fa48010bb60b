/** Runs `run` `total` times, `atOnce` at a time (a round waits for the one before it). */
export async function inRounds(total: number, atOnce: number, run: () => Promise<void>): Promise<void> {
  for (let done = 0; done < total; done += atOnce)
    await Promise.all(Array.from({ length: Math.min(atOnce, total - done) }, run));
}
