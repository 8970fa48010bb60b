/**
 * Thumbnails rendered in worker threads (docs/guide/isolated-processors.md): the worker publishes four
 * renders of a large picture, each a few hundred ms of pure CPU work in JS, and the isolate pool runs two at
 * a time beside the event loop, which stays free for acks and heartbeats. The PNGs land in the system's temp
 * folder. Run with `node dist/examples/thumbnails/main.js` (it renders, checks the files and exits).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createWarren, defineTopology } from '../../src';
import { renderThumbnail, type ThumbnailRequest } from './render-thumbnail';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const topology = defineTopology({ queues: { images: {} } });

const VIEWS: readonly ThumbnailRequest[] = [
  { width: 1200, height: 900, thumbWidth: 160, centre: [-0.5, 0], zoom: 1 },
  { width: 1200, height: 900, thumbWidth: 160, centre: [-0.745, 0.113], zoom: 40 },
  { width: 1200, height: 900, thumbWidth: 160, centre: [-1.25, 0.02], zoom: 12 },
  { width: 1200, height: 900, thumbWidth: 160, centre: [0.28, 0.01], zoom: 30 },
];

async function main(): Promise<void> {
  const warren = await createWarren({
    url,
    namespace: `example-thumbnails-${process.pid}`,
    topology,
    handlers: [renderThumbnail],
  });
  const folder = join(tmpdir(), 'warren-thumbnails');
  mkdirSync(folder, { recursive: true });
  const files: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    warren.on('completed', (e) => {
      const { png, width, height } = e.result as { png: Uint8Array; width: number; height: number };
      if (Buffer.from(png.subarray(1, 4)).toString('latin1') !== 'PNG') reject(new Error('not a PNG'));
      const file = join(folder, `${e.jobId}.png`);
      writeFileSync(file, png);
      files.push(`${file} (${width}×${height}, ${png.length} bytes)`);
      if (files.length === VIEWS.length) resolve();
    });
    warren.on('deadLettered', (e) => reject(new Error(`thumbnail ${e.jobId} failed: ${String(e.error)}`)));
  });
  try {
    await warren.start(); // starts the isolates: a processor that does not load fails here
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const started = Date.now();
    for (const [i, view] of VIEWS.entries())
      await warren.publish(renderThumbnail, view, { jobId: `thumbnail-${i + 1}` });
    await done;
    loop.disable();
    for (const file of files) console.log(`wrote ${file}`);
    console.log(
      `done: ${files.length} thumbnails rendered in worker threads in ${Date.now() - started} ms; the main event loop's p99 delay meanwhile ${(loop.percentile(99) / 1e6).toFixed(1)} ms`,
    );
  } finally {
    await warren.deleteTopology();
    await warren.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
