import type { Logger } from '../core';
import type { ConfirmPublisher } from '../connection';
import { encodeJobResult, JOB_RESULT_CONTENT_TYPE, resultAddressOf } from '../message';
import type { JobDelivery } from './delivery';

/** How long an answer may wait for its confirm: an answer nobody waits for any more is not retried. */
const ANSWER_TIMEOUT_MS = 10_000;

/** Where answers go: confirmed publishes, and the proof headers that bind an answer to its job id. */
export interface AnswerDeps {
  readonly confirms: Pick<ConfirmPublisher, 'send'>;
  readonly log: Logger;
  /** The proof headers of an awaited result's answer (bound to its job id); none without a signing key. */
  readonly proveAnswer?: ((content: Buffer, jobId: string) => Record<string, string>) | undefined;
}

export type JobAnswer =
  | { readonly status: 'completed'; readonly result: unknown }
  | { readonly status: 'failed'; readonly error: unknown };

/**
 * Answers a job published for its result, only to a direct reply-to address (`reply_to` or, on a retry,
 * `warren-reply-to`): a forged `reply_to` naming a queue is ignored, so a message from outside cannot
 * make a worker publish into a queue of its choice. With a signing key the answer carries a proof bound
 * to its job id, and the publisher takes no other (anyone who reads the job queue sees its reply
 * address and correlation id). Best effort: a publisher that is gone (its reply
 * address with it) loses the answer, which the broker drops.
 */
export function answerJob(deps: AnswerDeps, delivery: JobDelivery, answer: JobAnswer): void {
  const address = resultAddressOf(delivery.message.properties);
  if (address === undefined) return;
  const { jobId } = delivery.job;
  const content = encodeJobResult(
    answer.status === 'completed'
      ? { v: 1, jobId, status: 'completed', result: answer.result }
      : { v: 1, jobId, status: 'failed', error: describe(answer.error) },
  );
  const { confirms, log } = deps;
  confirms
    .send({
      exchange: '',
      routingKey: address,
      content,
      properties: {
        correlationId: jobId,
        contentType: JOB_RESULT_CONTENT_TYPE,
        ...(deps.proveAnswer ? { headers: deps.proveAnswer(content, jobId) } : {}),
      },
      deadline: Date.now() + ANSWER_TIMEOUT_MS,
      context: { jobId },
    })
    .catch((error: unknown) => log.debug({ err: error, jobId }, 'the job result could not be sent'));
}

function describe(error: unknown): { name: string; message: string; code?: string } {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}
