import { isAmqpReply, withThrowawayChannel } from '../connection';
import {
  findJob,
  jobStatus,
  recentJobs,
  resolveHistoryOptions,
  type HistoryOptions,
  type JobStatus,
  type RecentJobs,
} from '../history';
import type { RecordTrust } from '../records';
import { plannedStream, planStream, type TopologyPlan } from '../topology';
import type { OpsConnection } from './ops-connection';

/**
 * `ops.job(id)`: the job's events from the history, through its offset index (a stream beside the
 * history, declared with the history's retention on first use). `unknown` when no history stream exists.
 */
export async function lookupJob(
  plan: TopologyPlan,
  connection: OpsConnection,
  trust: RecordTrust,
  history: HistoryOptions | undefined,
  idleMs: number,
  jobId: string,
): Promise<JobStatus> {
  const { manager, confirms } = await connection.open();
  const openChannel = () => manager.openChannel();
  const stream =
    plannedStream(plan, 'history') ?? planStream('history', resolveHistoryOptions(history), plan.naming);
  const indexStream = plan.naming.jobHistoryIndex();
  try {
    // Only beside an existing history: a lookup must not create the history (or leave an index of none).
    await withThrowawayChannel(
      openChannel,
      async (channel) => {
        await channel.checkQueue(stream.name);
        await channel.assertQueue(indexStream, stream.assertion);
      },
      false,
    );
    const indexReader = trust.reader('history');
    const where = (offset: number) => ({ offset, stream: indexStream });
    return await findJob(openChannel, stream.name, jobId, idleMs, trust.reader('history'), {
      openChannel,
      stream: stream.name,
      indexStream,
      idleMs,
      acceptIndex: (r) => indexReader.accept(r.content, r.properties.headers, where(r.offset), 'index'),
      skipIndex: (r) => indexReader.skip('malformed', where(r.offset)),
      appendIndex: (content) =>
        confirms.send({
          exchange: '',
          routingKey: indexStream,
          content,
          properties: {
            persistent: true,
            contentType: 'application/octet-stream',
            headers: trust.proof('history', content, 'index'),
          },
          deadline: Date.now() + 10_000,
          context: {},
        }),
    });
  } catch (error) {
    if (isAmqpReply(error, 'NOT_FOUND')) return jobStatus(jobId, [], Date.now());
    throw error;
  }
}

/** The newest outcomes kept per list by `ops.recentJobs`. */
export const RECENT_JOBS_LIMIT = 20;

/**
 * `ops.recentJobs(queue)`: the newest completed and failed jobs of a queue (or all) from the history, read
 * from a window back from now (recent-jobs.ts). `undefined` when no history stream exists.
 */
export async function lookupRecentJobs(
  plan: TopologyPlan,
  connection: OpsConnection,
  trust: RecordTrust,
  history: HistoryOptions | undefined,
  idleMs: number,
  queue: string | undefined,
): Promise<RecentJobs | undefined> {
  const { manager } = await connection.open();
  const openChannel = () => manager.openChannel();
  const stream =
    plannedStream(plan, 'history') ?? planStream('history', resolveHistoryOptions(history), plan.naming);
  try {
    return await recentJobs(
      openChannel,
      stream.name,
      trust.reader('history'),
      queue,
      RECENT_JOBS_LIMIT,
      idleMs,
    );
  } catch (error) {
    if (isAmqpReply(error, 'NOT_FOUND')) return undefined;
    throw error;
  }
}
