import type { BatchContext, BatchHandler, BatchJob } from './batch-types';
import type { JobContext } from './job-types';

/** The contract of a handler class. */
export interface JobHandler<TData = unknown> {
  handle(data: TData, ctx: JobContext): Promise<unknown> | unknown;
}

/**
 * The batch form's types, under the one exported name (the root entry's budget): a class of
 * `@Job({ batch })` implements `JobHandler.Batch<T>`, whose `handleBatch` takes `JobHandler.BatchJob<T>[]`
 * and a `JobHandler.BatchContext` (docs/guide/batch-and-debounce.md).
 *
 * @example
 * @Job('rows.insert', { queue: 'rows', batch: { size: 100, timeoutMs: 1000 } })
 * class InsertRows implements JobHandler.Batch<Row> {
 *   async handleBatch(jobs: readonly JobHandler.BatchJob<Row>[], ctx: JobHandler.BatchContext) {
 *     await db.insertRows(jobs.map((job) => job.data), ctx.signal);
 *   }
 * }
 */
export declare namespace JobHandler {
  type Batch<TData = unknown> = BatchHandler<TData>;
  type BatchJob<TData = unknown> = BatchJobOf<TData>;
  type BatchContext = BatchContextOf;
}

type BatchJobOf<TData> = BatchJob<TData>;
type BatchContextOf = BatchContext;
