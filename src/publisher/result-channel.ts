import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import {
  closeChannel,
  ConfigurationError,
  JobResultError,
  PublishError,
  validationMessage,
  type PublishedJob,
} from '../core';
import type { OutgoingMessage } from '../connection';
import { DIRECT_REPLY_TO, parseJobResult, type JobResultBody } from '../message';

/**
 * A job published for its result: `result({ timeoutMs })` resolves with the handler's return value, as
 * JSON carried it (`TResult` is the handler's return type for a job of `defineJob`, else unknown).
 */
export interface ResultHandle<TResult = unknown> extends PublishedJob {
  /**
   * The handler's return value, or a JobResultError: `JOB_FAILED` (its final error, after retries),
   * `RESULT_TIMEOUT` (nothing within `timeoutMs`, which is mandatory) or `RESULT_LOST` (the connection
   * the answer would come back on was lost).
   */
  result(options: { readonly timeoutMs: number }): Promise<TResult>;
}

interface Waiting {
  readonly outcome: Promise<unknown>;
  readonly settle: (body: JobResultBody | Error) => void;
}

/**
 * The channel jobs published for their result go out on: it consumes RabbitMQ's direct reply-to
 * (noAck), which the broker requires of the channel that publishes with `reply_to:
 * amq.rabbitmq.reply-to`. Answers are matched by job id. When the channel or the connection goes, every
 * waiting handle rejects with RESULT_LOST (the broker's reply address died with the channel); the next
 * publish opens a new one.
 */
export class ResultChannel {
  private channel: Promise<ConfirmChannel> | undefined;
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly openChannel: () => Promise<ConfirmChannel>,
    /**
     * Whether an answer is the worker's (its proof, bound to the job id, with a signing key); default:
     * every well-formed answer is taken.
     */
    private readonly isProven: (
      content: Buffer,
      headers: Record<string, unknown> | undefined,
      jobId: string,
    ) => boolean = () => true,
  ) {}

  async send(message: OutgoingMessage, job: PublishedJob): Promise<ResultHandle> {
    const channel = await this.ready();
    const waiting = this.wait(job);
    await new Promise<void>((resolve, reject) => {
      channel.publish(
        message.exchange,
        message.routingKey,
        message.content,
        { ...message.properties, replyTo: DIRECT_REPLY_TO },
        (error: unknown) =>
          error
            ? reject(new PublishError('PUBLISH_NACKED', 'the broker did not take the job', message.context))
            : resolve(),
      );
    }).catch((error: unknown) => {
      this.waiting.delete(job.jobId);
      throw error;
    });
    return { ...job, result: (options) => this.result(job, waiting, options) };
  }

  /** Rejects every waiting handle with RESULT_LOST and closes the channel. */
  async close(): Promise<void> {
    const channel = this.channel;
    this.lost();
    if (channel) await closeChannel(await channel.catch(() => undefined));
  }

  private wait(job: PublishedJob): Waiting {
    let settle!: (body: JobResultBody | Error) => void;
    const outcome = new Promise<unknown>((resolve, reject) => {
      settle = (body) => {
        if (body instanceof Error) return reject(body);
        if (body.status === 'completed') return resolve(body.result);
        const { name, message, code } = body.error;
        reject(
          new JobResultError('JOB_FAILED', `${name}${code ? ` (${code})` : ''}: ${message}`, {
            jobId: job.jobId,
            jobName: job.name,
            queue: job.queue,
            remoteName: name,
          }),
        );
      };
    });
    outcome.catch(() => undefined); // rejected before anyone awaits it: not an unhandled rejection
    const waiting = { outcome, settle };
    this.waiting.set(job.jobId, waiting);
    return waiting;
  }

  private async result(
    job: PublishedJob,
    waiting: Waiting,
    options: { timeoutMs: number },
  ): Promise<unknown> {
    const timeoutMs = options?.timeoutMs;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
      throw new ConfigurationError(
        validationMessage('result() timeoutMs', 'must be an integer >= 1', timeoutMs),
      );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (this.waiting.get(job.jobId) === waiting) this.waiting.delete(job.jobId);
        reject(
          new JobResultError('RESULT_TIMEOUT', `no result within ${timeoutMs} ms (the job may still run)`, {
            jobId: job.jobId,
            jobName: job.name,
            queue: job.queue,
          }),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([waiting.outcome, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private ready(): Promise<ConfirmChannel> {
    this.channel ??= this.open();
    return this.channel;
  }

  private async open(): Promise<ConfirmChannel> {
    try {
      const channel = await this.openChannel();
      channel.on('error', () => undefined);
      channel.on('close', () => {
        if (this.channel !== undefined) this.lost();
      });
      await channel.consume(DIRECT_REPLY_TO, (message) => this.onAnswer(message), { noAck: true });
      return channel;
    } catch (error) {
      this.channel = undefined;
      throw error;
    }
  }

  private onAnswer(message: ConsumeMessage | null): void {
    if (message === null) return;
    const body = parseJobResult(message.content);
    if (body === undefined) return;
    const waiting = this.waiting.get(body.jobId);
    if (waiting === undefined) return;
    if (!this.isProven(message.content, message.properties.headers, body.jobId)) return;
    this.waiting.delete(body.jobId);
    waiting.settle(body);
  }

  private lost(): void {
    this.channel = undefined;
    const waiting = [...this.waiting.entries()];
    this.waiting.clear();
    for (const [jobId, w] of waiting)
      w.settle(
        new JobResultError('RESULT_LOST', "the publisher's channel closed before the job's result came", {
          jobId,
        }),
      );
  }
}
