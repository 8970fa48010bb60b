export type { IdempotencyStore, ClaimResult } from './idempotency-store';
export { IdempotencyStoreError, type IdempotencyOperation } from './idempotency-store-error';
export type { DedupStore, DedupRecord, ReserveResult } from './dedup-store';
export { MemoryDedupStore } from './memory-dedup-store';
export { PostgresDedupStore, type PostgresDedupStoreOptions } from './postgres-dedup-store';
export { MemoryIdempotencyStore } from './memory-idempotency-store';
export { PostgresIdempotencyStore } from './postgres-idempotency-store';
export {
  IDEMPOTENCY_DEFAULTS,
  resolveMemoryIdempotencyStoreOptions,
  resolvePostgresIdempotencyStoreOptions,
  type IdempotencyStoreOptions,
  type PgPool,
  type MemoryIdempotencyStoreOptions,
  type PostgresIdempotencyStoreOptions,
  type ResolvedMemoryIdempotencyStoreOptions,
  type ResolvedPostgresIdempotencyStoreOptions,
} from './options';
export type { JoinStore, JoinArrival, JoinFailure } from './join-store';
export { MemoryJoinStore } from './memory-join-store';
export { PostgresJoinStore, type PostgresJoinStoreOptions } from './postgres-join-store';
