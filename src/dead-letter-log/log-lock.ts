import { isAmqpReply, withThrowawayChannel, type OpenChannel } from '../connection';
import { WarrenError } from '../core';

/**
 * One replay or purge of a dead-letter log at a time, across every process: the holder owns an exclusive
 * queue named after the log. The broker refuses a second connection's declare of it (405 RESOURCE_LOCKED)
 * and deletes it when its connection closes, so a crashed holder frees it; a second replay or purge in the
 * same process is refused before it asks. Two replays of the same letters would otherwise both select them
 * dead and both republish them.
 */
export class LogLock {
  private held = false;

  constructor(
    private readonly openChannel: OpenChannel,
    /** The log's stream: the lock is `<stream>.lock`. */
    private readonly stream: string,
  ) {}

  async run<T>(action: 'replay' | 'purge', work: () => Promise<T>): Promise<T> {
    if (this.held) throw busy(this.stream, action, 'this process');
    this.held = true;
    const lock = `${this.stream}.lock`;
    try {
      await withThrowawayChannel(this.openChannel, (channel) =>
        channel.assertQueue(lock, { exclusive: true, durable: false, autoDelete: false }),
      ).catch((error: unknown) => {
        if (isAmqpReply(error, 'RESOURCE_LOCKED')) throw busy(this.stream, action, 'another process');
        throw error;
      });
      try {
        return await work();
      } finally {
        // gone with a lost connection, or held by another process since: nothing left to free
        await withThrowawayChannel(this.openChannel, (channel) => channel.deleteQueue(lock)).catch(
          () => undefined,
        );
      }
    } finally {
      this.held = false;
    }
  }
}

/**
 * `DEAD_LETTER_LOG_BUSY` (a `WarrenError`: the entries have no room for a class of its own): nothing was
 * replayed or marked; run it again once the other has finished, and it takes only what is still dead.
 */
function busy(stream: string, action: 'replay' | 'purge', holder: 'this process' | 'another process') {
  return new WarrenError(
    'DEAD_LETTER_LOG_BUSY',
    `dead-letter log '${stream}': a replay or purge is already running in ${holder}; nothing was done by this ${action}: run it again once that one has finished (it takes only the letters still dead)`,
  );
}
