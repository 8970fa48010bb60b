import type * as amqp from 'amqplib';
import { KEPT, openReadChannel, type ReadChannel } from './read-channel';

/**
 * The channels of one reader whose reads follow one another (a lookup: the checkpoint, then the shard it
 * names, then the batch the shard names), all opened at once when the reader starts:
 * - a **kept** channel that those reads take in turn: each read's consumer stays on it, holding its credit
 *   (the record that ends a read is not acked, so nothing more comes), and the next read's consumer joins
 *   it. A stream consumer on a channel that is open costs the broker far less than a channel of its own
 *   (a channel is four Erlang processes; a consumer is a reader of the stream), and opening several channels
 *   at once on a busy broker made a fresh process's first read wait 5–25 ms for its channel (issue 33);
 * - **spares** (`openSpares`, prefetch set) for reads beside them, each closed by its read;
 * - past those, a channel opened for the read.
 * A read takes the kept channel as soon as the read before has its last record (stream-reader.ts releases
 * it before handing that record over), so a read started from that record's visitor gets it.
 * `close()` closes what is left (the kept channel cancels its consumers with it).
 */
export class ReadChannels {
  private readonly kept: Promise<ReadChannel>;
  private readonly spares: Promise<amqp.Channel>[] = [];
  private busy = false;
  private broken = false;
  private closed = false;

  constructor(
    private readonly openChannel: () => Promise<amqp.Channel>,
    private readonly prefetch: number,
  ) {
    this.kept = openReadChannel(openChannel, prefetch).then((channel: ReadChannel) => {
      channel[KEPT] = () => {
        this.busy = false;
      };
      channel.on('close', () => {
        this.broken = true;
      });
      return channel;
    });
    this.kept.catch(() => {
      this.broken = true;
    });
  }

  /** Opens `n` spares (after the kept channel: the caller may open others in between). */
  openSpares(n: number): void {
    for (let i = 0; i < n; i += 1) {
      const spare = openReadChannel(this.openChannel, this.prefetch);
      spare.catch(() => undefined);
      this.spares.push(spare);
    }
  }

  /** A channel for one read: the kept one when it is free, else a spare, else a new one. */
  readonly open = (): Promise<amqp.Channel> => {
    if (!this.busy && !this.broken && !this.closed) {
      this.busy = true;
      return this.kept.catch(() => {
        this.busy = false;
        return this.openChannel();
      });
    }
    return this.spares.shift() ?? this.openChannel();
  };

  /** Closes the kept channel and the spares no read took. */
  close(): void {
    this.closed = true;
    for (const c of [this.kept, ...this.spares.splice(0)])
      void c.then((channel) => channel.close()).catch(() => undefined);
  }
}
