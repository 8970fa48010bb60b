/**
 * Which member owns which partition: rendezvous (highest-random-weight) hashing with a bound on the load.
 * Every member computes it from the same member list and gets the same answer, with no message exchanged.
 *
 * Each (member, partition) pair has a weight, a hash of both; the pairs are taken heaviest first and a
 * partition goes to the member of its pair unless it is owned already or that member holds ⌈N/M⌉
 * partitions. So no member owns more than ⌈N/M⌉, and a join or a leave moves mostly the partitions whose
 * heaviest pair it changes (about N/M of them), as plain rendezvous hashing does.
 */
export function assignPartitions(members: readonly string[], count: number): string[] {
  const owners: string[] = new Array<string>(count).fill('');
  if (members.length === 0) return owners;
  const capacity = Math.ceil(count / members.length);
  const pairs: { weight: number; member: string; partition: number }[] = [];
  for (const member of members)
    for (let partition = 0; partition < count; partition++)
      pairs.push({ weight: pairWeight(member, partition), member, partition });
  // ties (vanishingly rare) break by member name, so every member sorts alike
  pairs.sort((a, b) => b.weight - a.weight || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  const load = new Map<string, number>();
  let assigned = 0;
  for (const { member, partition } of pairs) {
    if (owners[partition] !== '' || (load.get(member) ?? 0) >= capacity) continue;
    owners[partition] = member;
    load.set(member, (load.get(member) ?? 0) + 1);
    if (++assigned === count) break;
  }
  return owners;
}

/** FNV-1a of `member#partition`, then a 32-bit avalanche (murmur3's finaliser): a uniform weight. */
function pairWeight(member: string, partition: number): number {
  let hash = 0x811c9dc5;
  const text = `${member}#${partition}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
