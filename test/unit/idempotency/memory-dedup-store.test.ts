import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryDedupStore } from '../../../src/idempotency';

const job = { jobId: 'x', name: 'report.build', queue: 'reports' };

describe('MemoryDedupStore', () => {
  it('frees only the reservation a release names: a job ending after its reservation expired keeps the newer one', async () => {
    let now = 1_000;
    const store = new MemoryDedupStore(() => now);
    assert.equal((await store.reserve(job, 100, 'first')).status, 'reserved');
    now += 200; // expired while the job ran
    assert.equal((await store.reserve(job, 100, 'second')).status, 'reserved');
    await store.release('x', 'first'); // the first job ends
    assert.equal((await store.reserve(job, 100, 'third')).status, 'exists');
    await store.release('x', 'second');
    assert.equal((await store.reserve(job, 100, 'third')).status, 'reserved');
  });

  it('frees whichever reservation holds the id when either side has no token (jobs of an earlier release)', async () => {
    const store = new MemoryDedupStore();
    await store.reserve(job, 60_000, 'a');
    await store.release('x');
    assert.equal(store.size, 0);
    await store.reserve(job, 60_000);
    await store.release('x', 'b');
    assert.equal(store.size, 0);
  });
});
