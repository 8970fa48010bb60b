import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryIdempotencyStore } from '../../../src';

function fakeClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('MemoryIdempotencyStore', () => {
  it('claims an id once, reports the holder as running until it completes, then as completed', async () => {
    const clock = fakeClock();
    const store = new MemoryIdempotencyStore({ now: clock.now, recheckMs: 2_000 });
    assert.deepEqual(await store.claim('a', 60_000), { status: 'claimed' });
    assert.deepEqual(await store.claim('a', 60_000), { status: 'running', retryInMs: 2_000 });
    await store.complete('a');
    assert.deepEqual(await store.claim('a', 60_000), { status: 'completed' });
    assert.deepEqual(await store.claim('b', 60_000), { status: 'claimed' }, 'other ids are independent');
  });

  it('re-checks a running id after what is left of its lease when that is shorter than recheckMs', async () => {
    const clock = fakeClock();
    const store = new MemoryIdempotencyStore({ now: clock.now, recheckMs: 5_000 });
    await store.claim('a', 3_000);
    clock.advance(1_000);
    assert.deepEqual(await store.claim('a', 3_000), { status: 'running', retryInMs: 2_000 });
  });

  it('lets a copy run once the lease of a claim that was never settled has expired (its worker died)', async () => {
    const clock = fakeClock();
    const store = new MemoryIdempotencyStore({ now: clock.now });
    await store.claim('a', 1_000);
    clock.advance(999);
    assert.equal((await store.claim('a', 1_000)).status, 'running');
    clock.advance(1);
    assert.deepEqual(await store.claim('a', 1_000), { status: 'claimed' });
  });

  it('lets the next copy run after a release (a failed attempt is retried)', async () => {
    const store = new MemoryIdempotencyStore();
    await store.claim('a', 60_000);
    await store.release('a');
    assert.deepEqual(await store.claim('a', 60_000), { status: 'claimed' });
  });

  it('forgets completed ids after the retention period', async () => {
    const clock = fakeClock();
    const store = new MemoryIdempotencyStore({ now: clock.now, retentionMs: 10_000 });
    await store.claim('old', 1_000);
    await store.complete('old');
    clock.advance(5_000);
    await store.claim('young', 1_000);
    await store.complete('young');
    clock.advance(4_999);
    assert.equal((await store.claim('old', 1_000)).status, 'completed');
    clock.advance(1);
    assert.deepEqual(await store.claim('old', 1_000), { status: 'claimed' });
    assert.equal((await store.claim('young', 1_000)).status, 'completed');
    assert.equal(store.size, 1, 'the expired id is gone from memory, not only ignored');
  });

  it('keeps at most maxCompleted ids, forgetting the oldest first', async () => {
    const store = new MemoryIdempotencyStore({ maxCompleted: 2 });
    for (const id of ['a', 'b', 'c']) {
      await store.claim(id, 1_000);
      await store.complete(id);
    }
    assert.equal(store.size, 2);
    assert.deepEqual(await store.claim('a', 1_000), { status: 'claimed' });
    assert.equal((await store.claim('b', 1_000)).status, 'completed');
    assert.equal((await store.claim('c', 1_000)).status, 'completed');
  });
});
