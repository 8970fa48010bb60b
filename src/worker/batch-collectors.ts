import { BatchCollector, type BatchedJob } from './batch-collector';
import type { JobRunContextDeps } from './job-run-context';
import type { RegisteredJob } from './registered-job';

/**
 * A collector per batch job of the worker (`@Job({ batch })`), by job name; undefined when no job runs
 * in batches, so that a worker without them carries nothing of this.
 */
export function batchCollectors(
  jobs: ReadonlyMap<string, RegisteredJob>,
  context: JobRunContextDeps,
): ReadonlyMap<string, BatchCollector> | undefined {
  let collectors: Map<string, BatchCollector> | undefined;
  for (const [name, job] of jobs) {
    if (job.batch === undefined) continue;
    collectors ??= new Map();
    collectors.set(
      name,
      new BatchCollector(job as BatchedJob, {
        context,
        report: (report) => {
          if (context.listens('batchSettled', undefined, report.name, report.queue))
            context.emit('batchSettled', report);
        },
      }),
    );
  }
  return collectors;
}
