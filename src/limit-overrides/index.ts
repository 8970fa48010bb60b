/**
 * Per-key limit overrides at run time (docs/guide/per-key-limits.md#changing-limits-at-run-time): the records of
 * the limits stream, written by `ops.limits` and followed by every process that owns keys with limits.
 */
export { LimitsStream, limitId, type LimitsStreamDeps } from './limits-stream';
export {
  decodeLimitRecord,
  encodeLimitRecord,
  checkLimitTarget,
  limitRecordOf,
  MAX_OVERRIDE,
  type LimitOverrideInput,
  type LimitRecord,
} from './limit-record';
