import type { Channel } from 'amqplib';
import { closeChannel, TopologyConflictError } from '../core';
import { sideStreamsOf, type NamespaceRemoval } from './plan-removal';
import type { TopologyPlan } from './topology-plan';

type Step = {
  readonly entity: 'queue' | 'exchange';
  readonly name: string;
  readonly declared: Record<string, unknown>;
  readonly run: (ch: Channel) => Promise<unknown>;
};

/**
 * Declares every entity of the plan on the broker, in order: exchanges, then queues (each parking
 * queue before its job queue), then bindings. Idempotent. The declarations are pipelined on one
 * channel; a 406 (an existing entity with other settings) becomes a TopologyConflictError naming the
 * entity, warren's settings and the broker's account of the existing ones. Nothing is ever deleted
 * to make it fit.
 */
export async function applyTopology(plan: TopologyPlan, openChannel: () => Promise<Channel>): Promise<void> {
  const steps: Step[] = [];
  for (const ex of plan.exchanges) {
    const options = {
      durable: ex.durable,
      autoDelete: ex.autoDelete,
      internal: ex.internal,
      arguments: ex.arguments,
    };
    steps.push({
      entity: 'exchange',
      name: ex.name,
      declared: { type: ex.type, ...options },
      run: (ch) => ch.assertExchange(ex.name, ex.type, options),
    });
  }
  for (const q of plan.queues) {
    steps.push({
      entity: 'queue',
      name: q.name,
      declared: { ...q.assertion },
      run: (ch) => ch.assertQueue(q.name, q.assertion),
    });
  }
  for (const b of plan.bindings) {
    steps.push({
      entity: b.destinationType,
      name: b.destination,
      declared: { bindingFrom: b.source, pattern: b.pattern },
      run: (ch) =>
        b.destinationType === 'queue'
          ? ch.bindQueue(b.destination, b.source, b.pattern, b.arguments)
          : ch.bindExchange(b.destination, b.source, b.pattern, b.arguments),
    });
  }
  await runPipelined(steps, openChannel);
}

/** Deletes every entity of the plan (tests and the CLI); messages in its queues are lost. */
export async function deleteTopology(plan: TopologyPlan, openChannel: () => Promise<Channel>): Promise<void> {
  const steps = [
    ...plan.queues.map((q) => deletion('queue', q.name)),
    ...sideStreamsOf(plan).map((name) => deletion('queue', name)),
    ...plan.exchanges.map((ex) => deletion('exchange', ex.name)),
  ];
  await runPipelined(steps, openChannel);
}

/** The step that deletes one queue or exchange (absent is fine: the broker answers ok). */
function deletion(entity: 'queue' | 'exchange', name: string): Step {
  return {
    entity,
    name,
    declared: {},
    run: (ch) => (entity === 'queue' ? ch.deleteQueue(name) : ch.deleteExchange(name)),
  };
}

/**
 * Deletes a namespace's entities by exact name (see planNamespaceRemoval): queues first, then exchanges.
 * Deleting a name the broker does not have succeeds, so the removal can be run again after a failure.
 */
export async function deleteNamespaceEntities(
  removal: NamespaceRemoval,
  openChannel: () => Promise<Channel>,
): Promise<void> {
  await runPipelined(
    removal.queues.map((name) => deletion('queue', name)),
    openChannel,
  );
  await runPipelined(
    removal.exchanges.map((name) => deletion('exchange', name)),
    openChannel,
  );
}

async function runPipelined(steps: readonly Step[], openChannel: () => Promise<Channel>): Promise<void> {
  const channel = await openChannel();
  // A channel error without a listener crashes the process; the failing step's promise carries it anyway.
  channel.on('error', () => undefined);
  try {
    const results = await Promise.allSettled(steps.map((step) => step.run(channel)));
    const failed = results.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) {
      const step = steps[failed]!;
      const error = (results[failed] as PromiseRejectedResult).reason as { code?: number; message?: string };
      if (error?.code === 406)
        throw new TopologyConflictError(
          step.entity,
          step.name,
          step.declared,
          error.message ?? String(error),
          error,
        );
      throw error;
    }
  } finally {
    await closeChannel(channel);
  }
}
