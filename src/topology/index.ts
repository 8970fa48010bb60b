export { defineTopology, mergeTopologies } from './define-topology';
export type {
  TopologyDeclaration,
  ExchangeDeclaration,
  QueueDeclaration,
  BindingDeclaration,
  ExchangeType,
  QueueType,
  QueueOverflow,
  FairnessDeclaration,
  PartitionsDeclaration,
} from './define-topology';
export { createNaming, type TopologyNaming } from './naming';
export { planTopology, type PlanInput } from './plan-topology';
export { CHECKPOINT_RETENTION, MARKS_RETENTION, planStream, type PlanStreams } from './plan-streams';
export type {
  TopologyPlan,
  PlannedExchange,
  PlannedQueue,
  PlannedJobQueue,
  PlannedDeadQueue,
  PlannedDelayQueue,
  PlannedLeaderQueue,
  PlannedLedgerQueue,
  PlannedPermitQueue,
  PlannedStream,
  StreamKind,
  PlannedBinding,
  PlannedJob,
  PlannedFairness,
  PlannedLane,
  PlannedPartitions,
  PlannedKeyLimits,
  QueueRole,
} from './topology-plan';
export { planFairness, DEFAULT_LANES, MAX_LANES } from './plan-lanes';
export { MAX_PARTITIONS } from './plan-partitions';
export { MAX_PER_KEY_CONCURRENCY, MAX_PER_KEY_RATE } from './plan-key-limits';
export { isJobQueue, isDeclaredJobQueue, isStream, plannedStream, requireStream } from './topology-plan';
export { delayRoute, routeAfter, type DelayPlan, type DelayLevel, type DelayRoute } from './delay-levels';
export { applyTopology, deleteTopology, deleteNamespaceEntities } from './apply-topology';
export { planNamespaceRemoval, sideStreamsOf, type NamespaceRemoval } from './plan-removal';
export { requireBrokerFeatures } from './broker-features';
export type { BrokerIdentity } from './broker-identity';
export {
  resolveTopologyOptions,
  TOPOLOGY_DEFAULTS,
  MAX_DELAY_LEVELS,
  type TopologyOptions,
  type ResolvedTopologyOptions,
  type DelayOptions,
} from './options';
export {
  X_ARGS,
  MAX_CONSUMER_TIMEOUT_MS,
  consumerTimeoutArguments,
  eventSubscriberQueueArguments,
  memberQueueArguments,
  headersBindingArguments,
  lookupQueueAssertion,
  pauseMarkerAssertion,
  streamAssertion,
  type QueueAssertion,
  type StreamRetention,
} from './queue-arguments';
