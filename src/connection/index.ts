export { ConnectionManager, type ConnectionEvents, type ReadyHook } from './connection-manager';
export { ManagedChannel, type ManagedChannelOptions } from './managed-channel';
export { ConfirmPublisher, type OutgoingMessage, type ConfirmPublisherOptions } from './confirm-publisher';
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
export { readBrokerVersion, type BrokerVersion } from './broker-version';
