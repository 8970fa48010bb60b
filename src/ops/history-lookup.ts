import { isAmqpReply } from '../connection';
import {
  askLookupServer,
  findJob,
  jobStatus,
  recentJobs,
  resolveHistoryOptions,
  type HistoryOptions,
  type JobStatus,
  type RecentJobs,
} from '../history';
import type { RecordTrust } from '../records';
import { plannedStream, planStream, type PlannedStream, type TopologyPlan } from '../topology';
import { historyIndex } from '../warren';
import type { OpsConnection } from './ops-connection';

/** The history stream as the plan has it, or as `history` would plan it (a config that does not plan it). */
function historyStream(plan: TopologyPlan, history: HistoryOptions | undefined): PlannedStream {
  return plannedStream(plan, 'history') ?? planStream('history', resolveHistoryOptions(history), plan.naming);
}

/**
 * `ops.job(id)`: the job's events from the history, through its index (history-index.ts: an index stream
 * and a checkpoint stream beside the history, declared with the history's retention and the checkpoints'
 * on first use, beside an existing history only), or from a lookup server's answer when one serves the
 * namespace (docs/operating/cli.md#a-lookup-server). `unknown` when no history stream exists.
 */
export async function lookupJob(
  plan: TopologyPlan,
  connection: OpsConnection,
  trust: RecordTrust,
  history: HistoryOptions | undefined,
  idleMs: number,
  jobId: string,
): Promise<JobStatus> {
  const stream = historyStream(plan, history);
  return connection.read(async ({ manager, confirms }) => {
    const openChannel = () => manager.openChannel();
    const index = historyIndex({ plan, stream, manager, trust, idleMs, send: (m) => confirms.send(m) });
    const queue = plan.naming.historyLookups();
    const served = await askLookupServer(openChannel, queue, jobId, trust, manager.username);
    try {
      return await findJob(openChannel, stream.name, jobId, idleMs, trust.reader('history'), index, served);
    } catch (error) {
      if (isAmqpReply(error, 'NOT_FOUND')) return jobStatus(jobId, [], Date.now());
      throw error;
    }
  });
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
  const stream = historyStream(plan, history);
  return connection.read(async ({ manager }) => {
    const openChannel = () => manager.openChannel();
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
  });
}
