import { HEADERS } from '../message';
import type { RecordTrust } from './record-trust';
import { parseJsonObject } from '../core';

/**
 * A reader's state after a pass over a stream up to (not including) offset `upTo`: the next reader takes it
 * and reads on from there instead of from the first record. `state` is the reader's own (checked again by
 * it); `guard` its replay memory (ReplayGuard.snapshot).
 */
export interface Checkpoint {
  readonly upTo: number;
  readonly at: number;
  readonly guard: unknown;
  readonly state: unknown;
}

/** A checkpoint larger than this is not written (RabbitMQ 4.x refuses messages over 16 MiB by default). */
export const MAX_CHECKPOINT_BYTES = 8 * 1024 ** 2;

/**
 * Encodes and checks the checkpoints of one stream (docs/reference/trust.md#checkpoints). A checkpoint says
 * what every record before `upTo` amounts to, so a forged one could hide records: a reader takes one only
 * when the broker itself vouches for its writer. The `user_id` property is that proof without a key:
 * RabbitMQ refuses a publish whose `user_id` is not the publishing connection's user, so a checkpoint
 * carrying the reader's own user was written by that user. With a signing key it must be signed too
 * (role `checkpoint`, the stream's name beside the body). A process that does not know its user (EXTERNAL
 * authentication) neither writes nor takes checkpoints without a key.
 */
export class CheckpointCodec {
  constructor(
    private readonly trust: RecordTrust,
    /** The stream the checkpoints are of (not the stream they are kept in). */
    private readonly stream: string,
    /** The broker user of this process's connection, when it is known. */
    private readonly user: () => string | undefined,
  ) {}

  /** Whether checkpoints this process writes would be taken by its peers, and theirs by it. */
  get isUsable(): boolean {
    return this.trust.isSigning || this.user() !== undefined;
  }

  /** The message of a checkpoint, or undefined when it cannot be one (too large, or not usable here). */
  encode(
    checkpoint: Checkpoint,
  ): { content: Buffer; userId?: string; headers: Record<string, string> } | undefined {
    if (!this.isUsable) return undefined;
    const content = Buffer.from(
      JSON.stringify({
        v: 1,
        s: this.stream,
        u: checkpoint.upTo,
        t: checkpoint.at,
        g: checkpoint.guard,
        d: checkpoint.state,
      }),
    );
    if (content.length > MAX_CHECKPOINT_BYTES) return undefined;
    const user = this.user();
    return {
      content,
      ...(user === undefined ? {} : { userId: user }),
      headers: this.trust.proof('checkpoint', content, this.stream),
    };
  }

  /** The checkpoint a message holds, when its writer is proven and its shape right; else undefined. */
  decode(
    content: Buffer,
    properties: { userId?: string; headers?: Record<string, unknown> },
  ): Checkpoint | undefined {
    if (!this.isUsable || content.length > MAX_CHECKPOINT_BYTES) return undefined;
    const user = this.user();
    if (user !== undefined && properties.userId !== user) return undefined;
    if (this.trust.isSigning && properties.headers?.[HEADERS.proof] === undefined) return undefined;
    if (
      !this.trust.check('checkpoint', content, properties.headers, this.stream, undefined, {
        stream: this.stream,
      })
    )
      return undefined;
    const c = parseJsonObject(content);
    if (c === undefined) return undefined;
    if (c.v !== 1 || c.s !== this.stream) return undefined;
    if (!Number.isSafeInteger(c.u) || (c.u as number) < 0 || typeof c.t !== 'number') return undefined;
    return { upTo: c.u as number, at: c.t, guard: c.g, state: c.d };
  }
}
