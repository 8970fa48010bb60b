import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobIds } from '../../../src/publisher/job-ids';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('JobIds', () => {
  it('gives version 4 UUIDs in the form of crypto.randomUUID, all different, across refills', () => {
    const ids = new JobIds();
    const seen = new Set<string>();
    // 256 ids a draw of random bytes: this crosses several draws
    for (let i = 0; i < 2_000; i++) {
      const id = ids.newId();
      assert.match(id, UUID_V4);
      seen.add(id);
    }
    assert.equal(seen.size, 2_000);
  });

  it('gives flat strings that outlive the next id (the shared text buffer is copied)', () => {
    const ids = new JobIds();
    const first = ids.newId();
    const copy = `${first}`;
    ids.newId();
    assert.equal(first, copy);
  });

  it('does not share its random bytes with another instance', () => {
    const a = new JobIds();
    const b = new JobIds();
    assert.notEqual(a.newId(), b.newId());
  });
});
