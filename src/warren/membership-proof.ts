import type { MembershipProof } from '../coordination';
import type { RecordTrust } from '../records';

/** The proof a partitioned queue's membership signs and checks its heartbeats with (role partition-members). */
export function membershipProof(trust: RecordTrust, exchange: string): MembershipProof {
  const reader = trust.reader('partition-members');
  return {
    sign: (body) => trust.proof('partition-members', body),
    accept: (body, headers) => reader.accept(body, headers, { exchange }),
  };
}
