/** What closing needs of an amqplib channel (Channel and ConfirmChannel alike). */
export interface ClosableChannel {
  close(): Promise<void>;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * Closes a channel and resolves once it is closed, however that comes about; never rejects. amqplib's
 * `channel.close()` never settles when the connection closes between the channel's close and its close-ok
 * (amqplib 2.3.1: 50 of 50 tries), so code that awaited it hung whenever its connection closed meanwhile (an
 * ops client closed during a dead-letter search hung the search for ever). The channel's `close` event comes
 * either way.
 */
export function closeChannel(channel: ClosableChannel | undefined): Promise<void> {
  if (channel === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      channel.off('close', done);
      resolve();
    };
    channel.once('close', done);
    try {
      channel.close().then(done, done);
    } catch {
      done(); // closed already: amqplib throws rather than rejects
    }
  });
}
