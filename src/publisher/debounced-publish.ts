import { ConfigurationError, type PublishedJob, type PublishOptions } from '../core';
import { HEADERS } from '../message';
import type { Prepared } from './publish-message';

/**
 * What the publisher needs of job control for `debounce` (docs/guide/batch-and-debounce.md): it decides
 * when the copy is due, lets `send` publish it, then records it on the job-control stream.
 */
export interface Debouncer {
  debounce(
    debounceId: string,
    options: { readonly periodMs: number; readonly maxWaitMs: number | undefined },
    send: (copy: string, delayMs: number) => Promise<void>,
  ): Promise<void>;
}

/** The job-control id of a job's debounce key: what `warren.delayed.cancel` takes to cancel its run. */
export function debounceId(jobName: string, key: string): string {
  return `debounce:${jobName}:${key}`;
}

/**
 * A debounced publish: the job goes through the delay levels as any delayed job, carrying its copy id
 * (`warren-control-copy`) and its debounce id (`warren-debounce`); when it comes due, a worker runs it only
 * if it is the latest copy of its debounce id. The options were checked by the caller.
 */
export async function publishDebounced(
  debouncer: Debouncer | undefined,
  name: string,
  options: PublishOptions & { readonly debounce: NonNullable<PublishOptions['debounce']> },
  prepare: (options: PublishOptions) => Promise<Prepared> | Prepared,
  send: (prepared: Prepared) => Promise<void>,
): Promise<PublishedJob> {
  if (debouncer === undefined)
    throw new ConfigurationError(`publish('${name}'): debounce needs a job-control stream`);
  const { debounce, ...rest } = options;
  const id = debounceId(name, debounce.key);
  let published: PublishedJob | undefined;
  await debouncer.debounce(
    id,
    { periodMs: debounce.periodMs, maxWaitMs: debounce.maxWaitMs },
    async (copy, delayMs) => {
      const prepared = await prepare({ ...rest, delayMs });
      const headers = prepared.message.properties.headers!;
      headers[HEADERS.controlCopy] = copy;
      headers[HEADERS.debounce] = id;
      await send(prepared);
      published = prepared.published;
    },
  );
  return published!;
}
