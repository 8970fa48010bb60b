import type * as amqp from 'amqplib';

/**
 * One step of what a connection runs after every (re)connect, before it reports `connected`: declare
 * the topology, open a channel, start consumers again. The list of steps is given once, in its order
 * (for a warren: src/warren/reconnect-steps.ts).
 */
export interface ReadyStep {
  /** Named in the log and in `onFailed` when the step fails. */
  readonly name: string;
  readonly run: (model: amqp.ChannelModel, generation: number) => Promise<void>;
}

/**
 * Runs `steps` one after the other on connection `generation`. The first step that fails stops the
 * run: `onFailed` is told which step it was and the run rejects with its error, so the caller closes
 * the connection and tries again (nothing is swallowed, and no later step runs on a half-ready
 * connection). Resolves false, running nothing more, once `isCurrent` says the connection was replaced.
 */
export async function runReadySteps(
  steps: readonly ReadyStep[],
  model: amqp.ChannelModel,
  generation: number,
  isCurrent: () => boolean,
  onFailed: (step: ReadyStep, error: unknown) => void,
): Promise<boolean> {
  for (const step of steps) {
    if (!isCurrent()) return false;
    try {
      await step.run(model, generation);
    } catch (error) {
      onFailed(step, error);
      throw error;
    }
  }
  return true;
}
