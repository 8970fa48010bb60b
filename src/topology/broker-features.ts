import { TopologyError } from '../core';
import type { BrokerIdentity } from './broker-identity';
import type { TopologyPlan } from './topology-plan';

/**
 * Refuses a plan that needs more than the connected broker has: quorum queues with priorities need
 * RabbitMQ 4.0 (3.x quorum queues would take the messages and ignore their priority). A broker whose
 * version cannot be read is given the benefit of the doubt.
 */
export function requireBrokerFeatures(plan: TopologyPlan, broker: BrokerIdentity | undefined): void {
  const prioritised = plan.queues.filter(
    (q) => q.role === 'job' && q.type === 'quorum' && q.maxPriority !== undefined,
  );
  if (prioritised.length === 0 || broker === undefined || broker.features.quorumPriorities) return;
  const names = prioritised.map((q) => q.name).join(', ');
  throw new TopologyError(
    `quorum queues with maxPriority (${names}) need RabbitMQ 4.0 or later; the broker is ${broker.product} ${broker.version}: upgrade it, or declare these queues type 'classic'`,
    { queue: prioritised[0]!.name },
  );
}
