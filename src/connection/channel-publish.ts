import type * as amqp from 'amqplib';
import { publishFramesSize, writePublishFrames } from './publish-frames';

type ConfirmCallback = (error: unknown) => void;

/** The two methods amqplib's own `ConfirmChannel.publish` is made of. */
interface ChannelInternals {
  sendMessage(fields: object, properties: object, content: Buffer): boolean;
  pushConfirmCallback(callback: ConfirmCallback): void;
}

/**
 * Options that need amqplib's own conversion (CC/BCC become headers, a bare deliveryMode): the public path.
 */
const CONVERTED_OPTIONS = ['CC', 'BCC', 'deliveryMode'] as const;

/**
 * `channel.publish` with a confirm callback, skipping amqplib's options conversion when it can.
 * That conversion (amqplib 2.3, `Args.publish`) makes every message's header table the prototype
 * of a fresh object, which V8 turns into a prototype map and the encoder then walks with `for…in`:
 * 2.2 µs of the 4.1 µs it takes to encode warren's properties, measured per publish. Building the
 * method and property fields here encodes the same bytes (a test compares the delivered messages)
 * and falls back to the public method when amqplib's internals are not what this expects.
 */
export function publishOnChannel(
  channel: amqp.ConfirmChannel,
  exchange: string,
  routingKey: string,
  content: Buffer,
  options: amqp.Options.Publish,
  callback: ConfirmCallback,
): boolean {
  const internals = channel as unknown as Partial<ChannelInternals>;
  if (
    typeof internals.sendMessage !== 'function' ||
    typeof internals.pushConfirmCallback !== 'function' ||
    CONVERTED_OPTIONS.some((key) => options[key] !== undefined)
  ) {
    return channel.publish(exchange, routingKey, content, options, callback);
  }
  const fields = {
    exchange,
    routingKey,
    mandatory: !!options.mandatory,
    immediate: false,
    ticket: undefined,
    contentType: options.contentType,
    contentEncoding: options.contentEncoding,
    headers: options.headers ?? {},
    deliveryMode: options.persistent === undefined ? undefined : options.persistent ? 2 : 1,
    priority: options.priority,
    correlationId: options.correlationId,
    replyTo: options.replyTo,
    expiration: options.expiration === undefined ? undefined : String(options.expiration),
    messageId: options.messageId,
    timestamp: options.timestamp,
    type: options.type,
    userId: options.userId,
    appId: options.appId,
    clusterId: undefined,
  };
  const writable = internals.sendMessage(fields, fields, content);
  internals.pushConfirmCallback(callback);
  return writable;
}

/** What `publishBatchOnChannel` did with each message of its batch. */
export interface BatchWrite {
  /** False once amqplib's channel buffer asks the writer to wait for `drain`. */
  readonly writable: boolean;
  /** Messages amqplib could not encode (index → error); nothing of them was sent. */
  readonly unencodable: ReadonlyMap<number, Error>;
  /** Index of the first message not sent because the channel threw (closing or closed), if any. */
  readonly stoppedAt?: number;
  readonly stopError?: unknown;
}

interface ConnectionInternals {
  readonly connection?: {
    readonly channels?: ({ buffer: BufferLike } | null)[];
    readonly frameMax?: number;
  };
  readonly ch?: number;
}

interface BufferLike {
  write(chunk: Buffer): boolean;
}

/** Frames of about this many bytes reach the socket together. */
const CHUNK_BYTES = 65_536;

/** What encoding frames straight into chunks needs of amqplib's internals. */
interface FastPath {
  /** The channel's entry in its connection's table, whose write buffer the batch stands in for. */
  readonly entry: { buffer: BufferLike };
  readonly real: BufferLike;
  readonly ch: number;
  readonly frameMax: number;
}

function fastPathOf(internals: ConnectionInternals & Partial<ChannelInternals>): FastPath | undefined {
  const ch = internals.ch;
  const entry = ch === undefined ? undefined : internals.connection?.channels?.[ch];
  const frameMax = internals.connection?.frameMax;
  const real = entry?.buffer;
  if (!entry || !real || ch === undefined || frameMax === undefined) return undefined;
  if (typeof internals.pushConfirmCallback !== 'function') return undefined;
  // A closing or closed channel has amqplib's throwing `sendMessage` set on it: through amqplib, the write
  // throws as it would have, rather than reaching a channel the broker no longer reads.
  if (Object.hasOwn(internals, 'sendMessage')) return undefined;
  return { entry, real, ch, frameMax };
}

/**
 * A batch's bytes in order: frames encoded straight into the current chunk, and whatever amqplib writes
 * (standing in for the channel's write buffer) as chunks of their own.
 */
class BatchChunks implements BufferLike {
  private readonly chunks: Buffer[] = [];
  private chunk = Buffer.allocUnsafe(0);
  private used = 0;

  /** amqplib's write of a message it encoded itself. */
  write(bytes: Buffer): boolean {
    return this.chunks.push(bytes) > 0;
  }

  /** Encodes one message's frames (`size` bytes, from publishFramesSize) into the current chunk. */
  append(ch: number, message: PublishArgs, size: number): void {
    if (this.used + size > this.chunk.length) {
      this.flush();
      this.chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, size));
    }
    this.used = writePublishFrames(this.chunk, this.used, ch, message);
  }

  /** Ends the current chunk, so that what amqplib writes next comes after it. */
  flush(): void {
    if (this.used > 0) this.chunks.push(this.chunk.subarray(0, this.used));
    this.chunk = Buffer.allocUnsafe(0);
    this.used = 0;
  }

  /** Writes every chunk to the channel's real buffer: `writable` until a write asks for `drain`. */
  drainTo(real: BufferLike, writable: boolean): boolean {
    this.flush();
    for (const bytes of this.chunks) writable = real.write(bytes);
    return writable;
  }
}

/**
 * One `publishOnChannel` call whose frames are encoded into one buffer of their exact size
 * (publish-frames.ts, the same bytes), written to the channel's buffer as amqplib's own single-chunk
 * publish does: a retry's republish is a lone message, and amqplib's encoder builds five buffers and walks
 * the header table with `for…in` for it. A message the frames encoder does not cover, or a channel
 * without the internals this expects, goes through `publishOnChannel`.
 */
export function publishOneOnChannel(
  channel: amqp.ConfirmChannel,
  message: PublishArgs,
  callback: ConfirmCallback,
): boolean {
  const internals = channel as unknown as ConnectionInternals & Partial<ChannelInternals>;
  const fast = fastPathOf(internals);
  const size = fast ? publishFramesSize(message, fast.frameMax) : undefined;
  if (size === undefined) {
    const { exchange, routingKey, content, properties } = message;
    return publishOnChannel(channel, exchange, routingKey, content, properties, callback);
  }
  const frames = Buffer.allocUnsafe(size);
  writePublishFrames(frames, 0, fast!.ch, message);
  // as amqplib's sendMessage: the frames reach its channel buffer, then the callback joins the confirms
  const writable = fast!.real.write(frames);
  internals.pushConfirmCallback!(callback);
  return writable;
}

/**
 * Many `publishOnChannel` calls whose frames reach the socket in chunks of about 64 KiB. amqplib
 * encodes every message into five buffers and writes it as its own chunk, which its muxer hands to
 * the socket separately: buffers, garbage and a system call per message, most of a pipelined
 * burst's CPU. Here the frames of common messages are encoded straight into the chunk
 * (publish-frames.ts, the same bytes); the others are encoded by amqplib into a collector standing
 * in for the channel's write buffer during this synchronous loop, so that every byte still goes out
 * in order. Without the internals this expects, the messages go out one by one through amqplib.
 */
export function publishBatchOnChannel(
  channel: amqp.ConfirmChannel,
  messages: readonly PublishArgs[],
  callback: (index: number, error: unknown) => void,
): BatchWrite {
  const internals = channel as unknown as ConnectionInternals & Partial<ChannelInternals>;
  const fast = fastPathOf(internals);
  const unencodable = new Map<number, Error>();
  const chunks = new BatchChunks();
  if (fast) fast.entry.buffer = chunks;
  let writable = true;
  let stoppedAt: number | undefined;
  let stopError: unknown;
  try {
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i]!;
      const size = fast ? publishFramesSize(message, fast.frameMax) : undefined;
      if (size !== undefined) {
        chunks.append(fast!.ch, message, size);
        internals.pushConfirmCallback!((error) => callback(i, error));
        continue;
      }
      chunks.flush();
      const { exchange, routingKey, content, properties } = message;
      try {
        const ok = publishOnChannel(channel, exchange, routingKey, content, properties, (error) =>
          callback(i, error),
        );
        if (!ok) writable = false;
      } catch (error) {
        if (error instanceof RangeError || error instanceof TypeError) {
          unencodable.set(i, error);
          continue;
        }
        stoppedAt = i;
        stopError = error;
        break;
      }
    }
  } finally {
    if (fast) {
      fast.entry.buffer = fast.real;
      writable = chunks.drainTo(fast.real, writable);
    }
  }
  return { writable, unencodable, stoppedAt, stopError };
}

export interface PublishArgs {
  readonly exchange: string;
  readonly routingKey: string;
  readonly content: Buffer;
  readonly properties: amqp.Options.Publish;
}
