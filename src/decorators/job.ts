import 'reflect-metadata';
import type { BatchHandler, BatchJob, JobHandler, JobOptions } from '../core';
import { requireClassDecoration } from './class-decoration';
import type { DefinedJob } from './define-job';
import { JOB_METADATA, type JobMetadata } from './job-metadata';

/** A class whose instances handle a job. */
// biome-ignore lint/suspicious/noExplicitAny: the user's constructor and payload types
export type JobClass<TData = any> = abstract new (...args: any[]) => JobHandler<TData> | BatchHandler<TData>;

/**
 * A job as the publishing calls take it: a @Job class, or a job of the function form ({@link defineJob}).
 */
// biome-ignore lint/suspicious/noExplicitAny: any payload and result (the data type is both read and written)
export type JobRef = JobClass | DefinedJob<any, any, any>;

/** The payload type a job takes: `JobData<typeof WelcomeEmail>`, `JobData<typeof welcomeEmail>`. */
export type JobData<C> =
  C extends DefinedJob<infer _D, infer _R, infer I>
    ? I
    : C extends abstract new (
          ...args: never[]
        ) => { handle(data: infer D, ...rest: never[]): unknown }
      ? D
      : C extends abstract new (
            ...args: never[]
          ) => { handleBatch(jobs: readonly BatchJob<infer D>[], ...rest: never[]): unknown }
        ? D
        : never;

/**
 * Marks a class as the handler of job `name`. Records plain metadata only; the instance's `handle`
 * runs each job (or, with `batch`, its `handleBatch` runs them in groups). Constructor arguments are the user's (or NestJS's) business. Works as a legacy
 * (`experimentalDecorators`) and as a standard (TC39) class decorator.
 *
 * @example
 * @Job('email.welcome', { queue: 'email', attempts: 5, backoff: { type: 'exponential', delayMs: 1000 } })
 * export class WelcomeEmail implements JobHandler<{ userId: string }> {
 *   constructor(private readonly mailer: Mailer) {}
 *   async handle(data: { userId: string }, ctx: JobContext) { await this.mailer.welcome(data.userId,
 * ctx.signal); }
 * }
 */
export function Job<TData>(name: string, options: JobOptions<TData>) {
  return <C extends abstract new (...args: never[]) => JobHandler<TData> | BatchHandler<TData>>(
    target: C,
    context?: ClassDecoratorContext<C>,
  ): void => {
    requireClassDecoration('@Job', target, context);
    const metadata: JobMetadata = Object.freeze({
      name,
      options: Object.freeze({ ...options }) as JobOptions,
    });
    Reflect.defineMetadata(JOB_METADATA, metadata, target);
  };
}

export type { JobMetadata };
