export { ConnectionManager, type ConnectionEvents } from './connection-manager';
export { runReadySteps, type ReadyStep } from './ready-steps';
export { ManagedChannel, type ManagedChannelOptions } from './managed-channel';
export {
  ConfirmPublisher,
  OutgoingPublish,
  type OutgoingMessage,
  type ConfirmPublisherOptions,
} from './confirm-publisher';
export {
  resolveConnectionOptions,
  redactUrl,
  maskPasswords,
  CONNECTION_DEFAULTS,
  type ConnectionOptions,
  type ResolvedConnectionOptions,
  type ReconnectOptions,
  type SocketOptions,
} from './options';
export {
  describeFeatures,
  readBrokerVersion,
  type BrokerFeatures,
  type BrokerVersion,
} from './broker-version';
export {
  withThrowawayChannel,
  checkQueueIfExists,
  exchangeExists,
  type OpenChannel,
} from './throwaway-channel';
export {
  amqpReplyOf,
  isAmqpReply,
  isConsumerTimeout,
  isStreamStarting,
  AMQP_REPLY_CODES,
  type AmqpReply,
  type AmqpReplyKind,
} from './amqp-reply';
