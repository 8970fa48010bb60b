/**
 * Broker-backed coordination between the processes of one application: leader election (a
 * single-active-consumer token), the cron ledger, and the global rate limiter with its permit refiller.
 * Above connection, below scheduler and worker.
 */
export { LeaderElection } from './leader-election';
export { CronLedger } from './cron-ledger';
export { RateLimiter, type PermitGate, type PermitOutcome } from './rate-limiter';
export {
  resolveLimiterOptions,
  resolveJobLimiters,
  checkSameLimit,
  LIMITER_DEFAULTS,
  type ResolvedLimiter,
  type DeclaredLimiters,
} from './limiter-options';
export { assignPartitions } from './partition-assignment';
export {
  PartitionMembership,
  membershipTiming,
  UNSIGNED_MEMBERSHIP,
  type MembershipListener,
  type MembershipProof,
  type MembershipTiming,
} from './partition-membership';
