import type * as amqp from 'amqplib';

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
export function publishConfirmed(
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
