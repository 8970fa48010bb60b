/**
 * The history of a partition run: one JSON line per operation, written as it happens (history.jsonl in the
 * run's folder), read back by the checker. Every line carries `t`, the machine's clock in ms (the checker's
 * clock: a process with a skewed clock still writes the real time), and `p`, who wrote it (a workload process
 * c1..c3, `nemesis`, or `drain` for what the harness read from the broker after the heal).
 *
 * A job's id is the idempotency key it is published with; a cron tick's id is warren's
 * `<schedule id>@<tick time>`, the same in whichever process fires it.
 */

/** What a published job is meant to do, so the checker knows what to expect of it. */
export type JobKind =
  /** runs on its first attempt */
  | 'plain'
  /** fails its first one or two attempts: travels the delay levels as retries */
  | 'retry'
  /** published with a delay: must not start before its due time */
  | 'delayed'
  /** fails every attempt: ends in dead letters (attempts exhausted) */
  | 'dead'
  /** throws UnrecoverableError: dead-lettered at once */
  | 'poison'
  /** written to the outbox table in a PostgreSQL transaction; the relay publishes it */
  | 'outbox';

export type HistoryEvent = { readonly t: number; readonly p: string } & (
  | { readonly e: 'publish'; readonly id: string; readonly kind: JobKind; readonly dueAt?: number }
  | { readonly e: 'confirmed'; readonly id: string }
  | { readonly e: 'publish-failed'; readonly id: string; readonly code: string }
  | { readonly e: 'outbox-committed'; readonly id: string; readonly kind: JobKind }
  | { readonly e: 'outbox-failed'; readonly id: string; readonly code: string }
  | { readonly e: 'start'; readonly id: string; readonly attempt: number }
  | { readonly e: 'complete'; readonly id: string; readonly attempt: number }
  | { readonly e: 'retried'; readonly id: string; readonly nextAttempt: number; readonly delayMs: number }
  | { readonly e: 'dead'; readonly id: string; readonly reason: string }
  | { readonly e: 'duplicate'; readonly id: string }
  | { readonly e: 'tick'; readonly id: string }
  | { readonly e: 'leader'; readonly isLeader: boolean }
  | { readonly e: 'connected'; readonly url: string }
  | { readonly e: 'disconnected' }
  | { readonly e: 'skew'; readonly ms: number }
  | { readonly e: 'nemesis'; readonly op: string; readonly detail: string; readonly tookMs?: number }
  | { readonly e: 'load'; readonly load1: number }
  /** after the heal and the drain: a dead letter read from a parking queue */
  | { readonly e: 'dead-letter'; readonly id: string; readonly reason: string }
  /** after the heal and the drain: a queue of the run's namespace and what it still holds */
  | {
      readonly e: 'queue-depth';
      readonly queue: string;
      /** job and delay queues must be empty after the drain; parking queues hold the dead letters */
      readonly role: 'job' | 'delay' | 'parking' | 'other';
      readonly messages: number;
    }
  /**
   * after the heal and the drain: what a quorum queue of the run's namespace holds beyond its ready messages
   * (Cluster.quorumHeld): checked out to a consumer, or dead-lettered and not yet handed on; -1: unread
   */
  | {
      readonly e: 'queue-held';
      readonly queue: string;
      readonly role: 'job' | 'delay' | 'parking' | 'other';
      readonly ready: number;
      readonly checkedOut: number;
      /** dead-lettered at-least-once, not taken by the dead-letter worker yet */
      readonly deadLetterWaiting: number;
      /** taken by the dead-letter worker, not confirmed by its target yet */
      readonly deadLetterUnconfirmed: number;
    }
);

export type HistoryEventOf<E extends HistoryEvent['e']> = Extract<HistoryEvent, { e: E }>;

/** Parses a history file's text (JSON lines); a line that is not an event is an error, never skipped. */
export function parseHistory(text: string): HistoryEvent[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      const event = JSON.parse(line) as HistoryEvent;
      if (typeof event.t !== 'number' || typeof event.e !== 'string')
        throw new Error(`history line ${index + 1} is not an event: ${line}`);
      return event;
    });
}
