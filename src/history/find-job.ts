import type * as amqp from 'amqplib';
import { readToEnd } from '../streams';
import {
  jobStatus,
  type HistoryBatch,
  type HistoryKind,
  type JobEvent,
  type JobStatus,
} from './history-event';

const RANK: Readonly<Record<HistoryKind, number>> = {
  published: 0,
  started: 1,
  progress: 1,
  failed: 2,
  retrying: 3,
  completed: 4,
  dead: 4,
  cancelled: 4,
};

/**
 * Where job X is: reads the history from its oldest kept record and keeps the events of one job. A batch
 * is parsed only when its bytes contain the id, so a scan costs about what reading the stream costs
 * (batches of up to a thousand events: a day of history is a few thousand records).
 */
export async function findJob(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  jobId: string,
  idleMs: number,
): Promise<JobStatus> {
  const needle = Buffer.from(JSON.stringify(jobId));
  const events: JobEvent[] = [];
  await readToEnd(openChannel, stream, 'first', { idleMs, prefetch: 200 }, (record) => {
    if (!record.content.includes(needle)) return;
    let batch: HistoryBatch;
    try {
      batch = JSON.parse(record.content.toString('utf8')) as HistoryBatch;
    } catch {
      return;
    }
    for (const e of batch.e) {
      if (e.j !== jobId) continue;
      events.push({
        kind: e.k,
        at: new Date(e.t),
        name: e.n,
        queue: e.q,
        ...(e.a !== undefined ? { attempt: e.a } : {}),
        ...(e.d !== undefined ? { durationMs: e.d } : {}),
        ...(e.u !== undefined ? { runAt: new Date(e.u) } : {}),
        ...(e.r !== undefined ? { reason: e.r } : {}),
        ...(e.x !== undefined ? { error: e.x } : {}),
        ...(e.k === 'progress' ? { progress: e.g } : {}),
        process: `${batch.h}:${batch.pid}`,
        processId: batch.p,
      });
    }
  });
  // Batches from several processes interleave: order by time, then by the lifecycle's order.
  events.sort((a, b) => a.at.getTime() - b.at.getTime() || RANK[a.kind] - RANK[b.kind]);
  return jobStatus(jobId, events, Date.now());
}
