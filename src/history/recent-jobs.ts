import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import { lastOffset, readStream } from '../streams';
import { isHistoryEvent, jobEvent, parseHistoryBatch } from './history-batch';
import type { JobEvent } from './history-event';

/** One job's latest outcome in the history: its event, with its id. */
export type RecentJob = JobEvent & { readonly jobId: string };

/** The newest outcomes of a queue in the history: completed, and failed (retrying or dead). */
export interface RecentJobs {
  readonly completed: readonly RecentJob[];
  readonly failed: readonly RecentJob[];
  /** The history was read from here, ms since epoch: older outcomes are not looked at. */
  readonly sinceMs: number;
  /** Batches read. */
  readonly batches: number;
}

/** Windows tried, widest first: the widest one read within the record budget wins. */
const WINDOWS_MS = [15 * 60_000, 60_000, 10_000];
/** A read of more batches than this is cut, and a narrower window tried. */
const MAX_BATCHES = 2000;

/**
 * The newest completed and failed jobs of a queue (or of all): reads the history from a window back from
 * now (attached by timestamp, never from its first record), the widest of 15 min, 1 min, 10 s that ends
 * within 2,000 batches, and keeps the newest `limit` of each. Each batch is proven and checked as
 * `ops.job(id)` checks it.
 */
export async function recentJobs(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  reader: RecordReader,
  queue: string | undefined,
  limit: number,
  idleMs: number,
  now = Date.now(),
): Promise<RecentJobs> {
  for (const [i, windowMs] of WINDOWS_MS.entries()) {
    const completed: RecentJob[] = [];
    const failed: RecentJob[] = [];
    const end = lastOffset(openChannel, stream, idleMs);
    end.catch(() => undefined);
    const sinceMs = now - windowMs;
    const read = await readStream(
      openChannel,
      stream,
      { timestampMs: sinceMs },
      { max: MAX_BATCHES, until: end, idleMs, prefetch: 200 },
      (r) => {
        const where = { offset: r.offset, stream };
        if (!reader.verify(r.content, r.properties.headers)) return;
        const batch = parseHistoryBatch(r.content);
        if (batch === undefined) return reader.skip('malformed', where);
        for (const e of batch.e) {
          if (!isHistoryEvent(e) || (queue !== undefined && e.q !== queue) || e.t < sinceMs) continue;
          const list =
            e.k === 'completed' ? completed : e.k === 'dead' || e.k === 'retrying' ? failed : undefined;
          list?.push({ ...jobEvent(e, batch), jobId: e.j });
          if (list !== undefined && list.length > 2 * limit) list.splice(0, list.length - limit);
        }
      },
    );
    await end;
    if (read.count < MAX_BATCHES || i === WINDOWS_MS.length - 1)
      return {
        completed: newest(completed, limit),
        failed: newest(failed, limit),
        sinceMs,
        batches: read.count,
      };
  }
  throw new Error('unreachable: the last window always returns');
}

function newest(list: RecentJob[], limit: number): RecentJob[] {
  return list.sort((a, b) => b.at.getTime() - a.at.getTime()).slice(0, limit);
}
