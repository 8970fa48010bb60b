/**
 * The record codec: the proof (HMAC-SHA256 with key ids) that warren's own stream records and control
 * messages carry when a signing key is configured, the replay guard of their readers, and the skip
 * counters every reader reports to (docs/reference/trust.md).
 */
export {
  RECORD_SIGNING_DEFAULTS,
  keyId,
  resolveRecordSigning,
  type RecordKey,
  type ResolvedRecordSigning,
  type SigningKeyOption,
} from './options';
export {
  PROOF_VERSION,
  newWriterId,
  signRecord,
  verifyRecord,
  type ProofFailure,
  type ProofOrigin,
  type RecordRole,
} from './record-proof';
export { ReplayGuard, type GuardSnapshot } from './replay-guard';
export { CheckpointCodec, MAX_CHECKPOINT_BYTES, type Checkpoint } from './checkpoint-codec';
export { RecordReader, RecordTrust, type RecordSkips, type SkipReason } from './record-trust';
