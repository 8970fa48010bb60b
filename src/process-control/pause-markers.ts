import type { Channel } from 'amqplib';
import { checkQueueIfExists, withThrowawayChannel } from '../connection';
import type { TopologyNaming } from '../topology';
import { pauseMarkerAssertion } from '../topology';

/**
 * The operator's paused state, kept on the broker: queue `<namespace>.warren.paused.<key>` exists while
 * an operator holds job queue `<key>`. Declaring and deleting are idempotent, so concurrent operators
 * never lose each other's pauses (no read-modify-write), and a process reads the state with a passive
 * declare whenever it connects or is told the marker changed.
 */
export class PauseMarkers {
  constructor(
    private readonly naming: TopologyNaming,
    private readonly openChannel: () => Promise<Channel>,
    private readonly expiresMs?: number,
  ) {}

  /** Whether an operator holds the queue. A passive declare on a channel of its own (a 404 closes it). */
  async isPaused(queueKey: string): Promise<boolean> {
    return (await checkQueueIfExists(this.openChannel, this.naming.pauseMarker(queueKey))) !== undefined;
  }

  /** The keys among `queueKeys` an operator holds. */
  async pausedAmong(queueKeys: readonly string[]): Promise<Set<string>> {
    const states = await Promise.all(queueKeys.map(async (key) => [key, await this.isPaused(key)] as const));
    return new Set(states.filter(([, paused]) => paused).map(([key]) => key));
  }

  async mark(queueKey: string): Promise<void> {
    await this.withChannel((ch) => ch.assertQueue(this.naming.pauseMarker(queueKey), this.assertion()));
  }

  async unmark(queueKey: string): Promise<void> {
    await this.withChannel((ch) => ch.deleteQueue(this.naming.pauseMarker(queueKey)));
  }

  private assertion() {
    return pauseMarkerAssertion(this.expiresMs);
  }

  private async withChannel(run: (channel: Channel) => Promise<unknown>): Promise<void> {
    await withThrowawayChannel(this.openChannel, run);
  }
}
