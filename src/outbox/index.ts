export {
  Outbox,
  type OutboxBacklog,
  type OutboxPublished,
  type OutboxPublishOptions,
  type OutboxRowOptions,
  type ValidateJob,
} from './outbox';
export { OutboxRelay, type SendJob } from './outbox-relay';
export { OutboxError, type OutboxOperation } from './outbox-error';
export { outboxTableSql } from './outbox-sql';
export {
  OUTBOX_DEFAULTS,
  resolveOutboxOptions,
  type OutboxOptions,
  type OutboxPool,
  type OutboxRelayOptions,
  type OutboxTransaction,
  type PgPoolClient,
  type PgResult,
  type ResolvedOutboxOptions,
} from './options';
export { kyselyTransaction, type KyselyExecutor } from './kysely-transaction';
export { knexTransaction, type KnexExecutor } from './knex-transaction';
