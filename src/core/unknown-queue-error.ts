import { WarrenError } from './errors';

/** A queue key the topology does not declare (`warren pause emial`). Code UNKNOWN_QUEUE. */
export class UnknownQueueError extends WarrenError {
  constructor(
    queue: string,
    readonly known: readonly string[],
  ) {
    super(
      'UNKNOWN_QUEUE',
      `unknown queue '${queue}'${known.length ? ` (declared: ${known.join(', ')})` : ' (no queues are declared)'}`,
      { queue },
    );
  }
}
