import { signRecord, verifyRecord, type ResolvedRecordSigning } from '../records';
import { NO_SLIP_SEAL, type SlipEnvelope, type SlipSeal } from '../workflow';

/** A slip's proof needs no writer or sequence: a genuine step delivered twice is a duplicate, which
 * slips already allow (activities are idempotent); what it proves is that warren built the envelope. */
const SLIP_WRITER = '0'.repeat(16);

/** The canonical bytes of an envelope: its JSON without `proof`, keys in the order they were built. */
function canonical(envelope: SlipEnvelope): Buffer {
  const { proof: _proof, ...rest } = envelope;
  return Buffer.from(JSON.stringify(rest));
}

/**
 * The seal of slip envelopes for a namespace: with a signing key, an HMAC over the envelope's JSON in
 * its `proof` field (the record codec's proof, role `slip`); without one, no seal (docs/reference/trust.md).
 */
export function slipSeal(signing: ResolvedRecordSigning | undefined, namespace: string): SlipSeal {
  if (signing === undefined) return NO_SLIP_SEAL;
  return {
    seal: (envelope) => ({
      ...envelope,
      proof: signRecord(signing, namespace, 'slip', SLIP_WRITER, 1, canonical(envelope)),
    }),
    isSealed: (envelope) =>
      (envelope.proof === undefined && signing.acceptUnsigned) ||
      typeof verifyRecord(signing, namespace, 'slip', envelope.proof, canonical(envelope)) === 'object',
  };
}
