import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assignPartitions } from '../../../src/coordination';

const members = (n: number, prefix = 'host/') =>
  Array.from({ length: n }, (_, i) => `${prefix}${1000 + i}/ab${i}`);

describe('partition assignment (bounded rendezvous hashing)', () => {
  it('gives every partition one owner and no member more than ⌈N/M⌉, for every N up to 64 and M up to 12', () => {
    for (let count = 1; count <= 64; count++)
      for (let m = 1; m <= 12; m++) {
        const list = members(m);
        const owners = assignPartitions(list, count);
        assert.equal(owners.length, count);
        assert.ok(
          owners.every((o) => list.includes(o)),
          `N=${count} M=${m}: every partition owned`,
        );
        const most = Math.max(...list.map((member) => owners.filter((o) => o === member).length));
        assert.ok(most <= Math.ceil(count / m), `N=${count} M=${m}: most ${most}`);
      }
  });

  it('is the same whatever the order members are listed in', () => {
    const list = members(5);
    assert.deepEqual(assignPartitions(list, 16), assignPartitions([...list].reverse(), 16));
  });

  it('moves few partitions when a member joins or leaves', () => {
    let moved = 0;
    let trials = 0;
    for (let seed = 0; seed < 50; seed++) {
      const list = members(4, `h${seed}/`);
      const before = assignPartitions(list, 32);
      const joined = assignPartitions([...list, `h${seed}/9999/new`], 32);
      moved += before.filter((owner, i) => owner !== joined[i]).length;
      trials += 1;
    }
    // a newcomer takes about 32/5 = 6.4 partitions; the bound on the load moves a few more
    const average = moved / trials;
    assert.ok(average <= 32 / 5 + 4, `moved ${average.toFixed(1)} partitions on average`);
  });

  it('owns nothing with no members', () => {
    assert.deepEqual(assignPartitions([], 3), ['', '', '']);
  });
});
