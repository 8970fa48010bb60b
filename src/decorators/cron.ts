import 'reflect-metadata';
import type { MissedTickPolicy } from '../core';
import { requireClassDecoration } from './class-decoration';
import { CRON_METADATA } from './job-metadata';

/** Options of `@Cron(pattern, options)`. */
export interface CronOptions<TData = unknown> {
  /** IANA time zone the pattern is read in (`Asia/Tokyo`). Default: `scheduler.tz` (UTC). */
  readonly tz?: string;
  /** The payload every firing publishes. Default `{}`. */
  readonly data?: TData;
  /** The schedule's id: part of every firing's job id, and what `unschedule` takes. Default: the job name. */
  readonly id?: string;
  /**
   * What a new leader does about ticks that fell while no process led. Default: `scheduler.missedTicks`
   * ('skip').
   */
  readonly missedTicks?: MissedTickPolicy;
}

/** One `@Cron` of a class, as recorded. */
export interface CronMetadata {
  readonly pattern: string;
  readonly options: CronOptions;
}

/**
 * Publishes the class's job on a cron pattern: once per tick across every process of the namespace
 * (the elected leader fires). Goes with `@Job` on the same class; a class may carry several `@Cron`s
 * with distinct ids. Patterns have 5 fields, or 6 with seconds first; see docs/guide/cron.md. Legacy or
 * standard (TC39) decorator alike.
 *
 * @example
 * @Cron('0 9 * * *', { tz: 'Asia/Tokyo', data: { report: 'daily' } })
 * @Job('report.send', { queue: 'reports' })
 * export class SendReport implements JobHandler<{ report: string }> {
 *   async handle(data: { report: string }) { ... }
 * }
 */
export function Cron<TData>(pattern: string, options: CronOptions<TData> = {}) {
  return <C extends abstract new (...args: never[]) => unknown>(
    target: C,
    context?: ClassDecoratorContext<C>,
  ): void => {
    requireClassDecoration('@Cron', target, context);
    const existing =
      (Reflect.getOwnMetadata(CRON_METADATA, target) as readonly CronMetadata[] | undefined) ?? [];
    const entry: CronMetadata = Object.freeze({
      pattern,
      options: Object.freeze({ ...options }) as CronOptions,
    });
    // Decorators apply bottom-up: prepend so that the list reads in source order.
    Reflect.defineMetadata(CRON_METADATA, Object.freeze([entry, ...existing]), target);
  };
}

/**
 * The `@Cron` schedules of a class or of an instance's class, or the `cron` option of a defined job, in
 * source order (empty when none).
 */
export function readCronMetadata(target: object): readonly CronMetadata[] {
  if (typeof target === 'object' && target !== null && Object.hasOwn(target, CRON_METADATA))
    return (target as { [CRON_METADATA]: readonly CronMetadata[] })[CRON_METADATA];
  const ctor = typeof target === 'function' ? target : (target as { constructor?: unknown }).constructor;
  if (typeof ctor !== 'function') return [];
  return (Reflect.getOwnMetadata(CRON_METADATA, ctor) as readonly CronMetadata[] | undefined) ?? [];
}
