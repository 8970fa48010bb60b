import type * as amqp from 'amqplib';
import type { RecordReader } from '../records';
import { readToEnd, type StreamRecord } from '../streams';
import { isHistoryEvent, jobEvent, parseHistoryBatch, RANK } from './history-batch';
import { jobStatus, type JobEvent, type JobStatus } from './history-event';
import type { HistoryIndex } from './history-index';

/** The events of one job kept by a lookup: its most recent ones (a forged flood cannot fill memory). */
const MAX_EVENTS_PER_JOB = 10_000;

/**
 * Where job X is. Without `index` (or one this process cannot trust): reads the history from its oldest
 * kept record and keeps the events of one job. With it: reads the batches the index names and what no
 * trusted block covers (history-index.ts). With `served` (a lookup server's answer): those records alone.
 * Either way a batch is parsed only when its bytes contain the id, and every event shown comes from a batch
 * read, proven and parsed here: a wrong index entry costs a read, never an event.
 */
export async function findJob(
  openChannel: () => Promise<amqp.Channel>,
  stream: string,
  jobId: string,
  idleMs: number,
  reader: RecordReader,
  index?: HistoryIndex,
  /** The job's records as a lookup server handed them (served-lookup.ts): proven here like any other. */
  served?: readonly StreamRecord[],
): Promise<JobStatus> {
  const needle = Buffer.from(JSON.stringify(jobId));
  const events: JobEvent[] = [];
  const seen = new Set<number>();
  const onRecord = (record: StreamRecord) => {
    if (seen.has(record.offset)) return;
    seen.add(record.offset);
    if (!record.content.includes(needle)) return;
    const where = { offset: record.offset, stream };
    if (!reader.accept(record.content, record.properties.headers, where)) return;
    const batch = parseHistoryBatch(record.content);
    if (batch === undefined) return reader.skip('malformed', where);
    for (const e of batch.e) {
      if (e?.j !== jobId) continue;
      const event = isHistoryEvent(e) ? jobEvent(e, batch) : undefined;
      if (event === undefined) reader.skip('malformed', where);
      else if (events.push(event) > MAX_EVENTS_PER_JOB) events.shift();
    }
  };
  if (served !== undefined) for (const record of served) onRecord(record);
  else if (index === undefined || !index.isUsable)
    await readToEnd(openChannel, stream, 'first', { idleMs, prefetch: 200 }, onRecord);
  else await index.lookUp(jobId, onRecord);
  // Batches from several processes interleave: order by time, then by the lifecycle's order.
  events.sort((a, b) => a.at.getTime() - b.at.getTime() || RANK[a.kind] - RANK[b.kind]);
  return jobStatus(jobId, events, Date.now());
}
