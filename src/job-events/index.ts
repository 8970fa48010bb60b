/**
 * Live job events across processes: the relay that sends a process's job events to the subscribers
 * that asked for them, and the subscriber that follows a job id, a job name or a queue from any process.
 * A live view, at most once; the history stream is the record (DESIGN.md, "Live views vs records").
 */
export { EventRelay } from './event-relay';
export { JobEventSubscriber, type EventSubscriberDeps } from './event-subscriber';
export { JobEventSubscription } from './event-subscription';
export {
  LIVE_EVENT_KINDS,
  type EventFilter,
  type LiveEventBase,
  type LiveEventKind,
  type LiveJobEvent,
  type SubscriptionMessage,
  type SubscriptionNotice,
} from './event-record';
export {
  EVENTS_DEFAULTS,
  SUBSCRIBE_DEFAULTS,
  resolveEventsOptions,
  resolveSubscribeOptions,
  type EventsOptions,
  type ResolvedEventsOptions,
  type SubscribeOptions,
} from './options';
