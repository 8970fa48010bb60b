import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import {
  ConfigurationError,
  IdempotencyStoreError,
  PostgresDedupStore,
  PostgresIdempotencyStore,
  PostgresJoinStore,
} from '../../src';
import { waitFor } from '../support/wait-for';

const PG_URL = process.env.WARREN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describe('PostgresIdempotencyStore', () => {
  let pool: Pool;
  const tables: string[] = [];
  /** A fresh table per test, dropped afterwards. */
  const tableName = () => {
    const name = `warren_idem_t_${randomBytes(4).toString('hex')}`;
    tables.push(name);
    return name;
  };

  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 20 });
  });
  afterEach(async () => {
    for (const name of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
  });
  after(() => pool.end());

  it('lets many processes create their tables at once: idempotency, deduplication and join stores', async () => {
    // The loser of a CREATE TABLE IF NOT EXISTS race gets 23505, 42P07 or 42710 (the row type): the
    // table is there all the same. Rounds of fresh tables, so that the race is actually run.
    for (let round = 0; round < 8; round++) {
      const [idem, dedup, join] = [tableName(), tableName(), tableName()];
      await Promise.all(
        Array.from({ length: 6 }, () => [
          new PostgresIdempotencyStore({ pool, tableName: idem }).prepare(),
          new PostgresDedupStore({ pool, tableName: dedup }).prepare(),
          new PostgresJoinStore({ pool, tableName: join }).prepare(),
        ]).flat(),
      );
      const made = await pool.query('SELECT count(*)::int AS n FROM pg_tables WHERE tablename = ANY($1)', [
        [idem, dedup, join],
      ]);
      assert.equal(made.rows[0].n, 3);
    }
  });

  it('gives a deduplication table of an earlier release its token column, once, from many stores at once', async () => {
    const name = tableName();
    await pool.query(
      `CREATE TABLE "${name}" (job_id text PRIMARY KEY, name text NOT NULL, queue text NOT NULL, expires_at timestamptz NOT NULL)`,
    );
    await pool.query(
      `INSERT INTO "${name}" VALUES ('old', 'report.build', 'reports', now() + interval '1 hour')`,
    );
    const stores = Array.from({ length: 4 }, () => new PostgresDedupStore({ pool, tableName: name }));
    await Promise.all(stores.map((store) => store.prepare()));
    const columns = await pool.query(
      'SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [name],
    );
    assert.deepEqual(
      columns.rows.map((r) => r.column_name),
      ['job_id', 'name', 'queue', 'expires_at', 'token'],
    );
    const job = { jobId: 'old', name: 'report.build', queue: 'reports' };
    assert.equal((await stores[0]!.reserve(job, 60_000, '1')).status, 'exists'); // the old row still holds
    await stores[1]!.release('old', '2'); // a reservation made before tokens is freed by any release
    assert.equal((await stores[2]!.reserve(job, 60_000, '3')).status, 'reserved');
    await stores[3]!.release('old', '4');
    assert.equal((await stores[0]!.reserve(job, 60_000, '5')).status, 'exists');
  });

  it('creates its table and index if missing, and prepare() may run from many stores at once', async () => {
    const name = tableName();
    await Promise.all(
      Array.from({ length: 5 }, () => new PostgresIdempotencyStore({ pool, tableName: name }).prepare()),
    );
    const columns = await pool.query(
      'SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [name],
    );
    assert.deepEqual(
      columns.rows.map((r) => r.column_name),
      ['job_id', 'state', 'owner', 'expires_at'],
    );
    const indexes = await pool.query(
      'SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname',
      [name],
    );
    assert.deepEqual(
      indexes.rows.map((r) => r.indexname),
      [`${name}_expires_at`, `${name}_pkey`],
    );
  });

  it('grants a contended claim to exactly one of many concurrent callers on separate connections', async () => {
    const name = tableName();
    const stores = [
      new PostgresIdempotencyStore({ pool, tableName: name }),
      new PostgresIdempotencyStore({ pool, tableName: name }),
    ];
    await stores[0]!.prepare();
    for (const id of ['job-1', 'job-2', 'job-3']) {
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) => stores[i % 2]!.claim(id, 60_000)),
      );
      assert.equal(results.filter((r) => r.status === 'claimed').length, 1, JSON.stringify(results));
      assert.ok(results.every((r) => r.status === 'claimed' || r.status === 'running'));
    }
  });

  it('reports a running claim, then the completion, across store instances', async () => {
    const name = tableName();
    const a = new PostgresIdempotencyStore({ pool, tableName: name, recheckMs: 1_500 });
    const b = new PostgresIdempotencyStore({ pool, tableName: name, recheckMs: 1_500 });
    assert.deepEqual(await a.claim('j', 60_000), { status: 'claimed' });
    assert.deepEqual(await b.claim('j', 60_000), { status: 'running', retryInMs: 1_500 });
    const short = await b.claim('other', 60_000);
    assert.equal(short.status, 'claimed');
    await a.complete('j');
    assert.deepEqual(await b.claim('j', 60_000), { status: 'completed' });
  });

  it('re-checks a running id after what is left of its lease when that is shorter than recheckMs', async () => {
    const name = tableName();
    const store = new PostgresIdempotencyStore({ pool, tableName: name, recheckMs: 10_000 });
    await store.claim('j', 2_000);
    const result = await store.claim('j', 2_000);
    assert.equal(result.status, 'running');
    assert.ok(
      result.status === 'running' && result.retryInMs > 1_000 && result.retryInMs <= 2_000,
      JSON.stringify(result),
    );
  });

  it("lets another worker claim an id whose lease expired (its worker crashed), and ignores the crashed worker's late release", async () => {
    const name = tableName();
    const crashed = new PostgresIdempotencyStore({ pool, tableName: name });
    const survivor = new PostgresIdempotencyStore({ pool, tableName: name });
    assert.equal((await crashed.claim('j', 300)).status, 'claimed');
    assert.equal((await survivor.claim('j', 60_000)).status, 'running');
    const claimed = await waitForClaim(survivor, 'j');
    assert.deepEqual(claimed, { status: 'claimed' });
    // The first worker was only slow, not dead: its release must not free the survivor's claim.
    await crashed.release('j');
    assert.equal(
      (await new PostgresIdempotencyStore({ pool, tableName: name }).claim('j', 60_000)).status,
      'running',
    );
  });

  it('frees the claim on release so a retry can run', async () => {
    const name = tableName();
    const store = new PostgresIdempotencyStore({ pool, tableName: name });
    await store.claim('j', 60_000);
    await store.release('j');
    assert.deepEqual(await store.claim('j', 60_000), { status: 'claimed' });
  });

  it('runs an id again after its retention, and sweep() deletes expired rows', async () => {
    const name = tableName();
    const store = new PostgresIdempotencyStore({
      pool,
      tableName: name,
      retentionMs: 200,
      sweepIntervalMs: 0,
    });
    for (const id of ['a', 'b']) {
      await store.claim(id, 60_000);
      await store.complete(id);
    }
    assert.equal((await store.claim('a', 60_000)).status, 'completed');
    await waitForClaim(store, 'a');
    const count = async () => Number((await pool.query(`SELECT count(*) FROM "${name}"`)).rows[0].count);
    assert.equal(await count(), 2, "'a' is claimed again (its row reused), 'b' expired but not swept yet");
    // 'b' completed a moment after 'a', so its retention may end a moment later too
    await waitFor(
      async () =>
        Number(
          (await pool.query(`SELECT count(*) FROM "${name}" WHERE job_id = 'b' AND expires_at <= now()`))
            .rows[0].count,
        ) === 1,
      { what: "'b' to expire" },
    );
    assert.equal(await store.sweep(), 1);
    assert.equal(await count(), 1);
  });

  it('sweeps opportunistically during claims, at most once per sweepIntervalMs', async () => {
    const name = tableName();
    const store = new PostgresIdempotencyStore({ pool, tableName: name, retentionMs: 1, sweepIntervalMs: 1 });
    await store.claim('old', 60_000);
    await store.complete('old');
    const rows = async () =>
      (await pool.query(`SELECT job_id FROM "${name}" ORDER BY job_id`)).rows.map((r) => r.job_id as string);
    let result = await rows();
    for (let i = 0; i < 200 && result.includes('old'); i++) {
      await store.claim(`new-${i}`, 60_000);
      result = await rows();
    }
    assert.ok(!result.includes('old'), 'the expired id was swept by a later claim');
  });

  it('refuses a table of another shape with a typed error naming both column sets', async () => {
    const name = tableName();
    await pool.query(`CREATE TABLE "${name}" (id serial PRIMARY KEY, payload jsonb)`);
    const store = new PostgresIdempotencyStore({ pool, tableName: name });
    await assert.rejects(store.prepare(), (error: unknown) => {
      assert.ok(error instanceof IdempotencyStoreError);
      assert.equal(error.code, 'IDEMPOTENCY_STORE_FAILED');
      assert.equal(error.operation, 'prepare');
      assert.equal(error.table, name);
      assert.match(
        error.message,
        /expected job_id text, state text, owner text, expires_at timestamp with time zone; found id integer, payload jsonb/,
      );
      return true;
    });
    await assert.rejects(
      store.claim('j', 1_000),
      IdempotencyStoreError,
      'a claim on a broken store fails the same way, it never pretends to have claimed',
    );
  });

  it('reports an unreachable database as a typed error with the driver error as cause', async () => {
    const deadPool = new Pool({
      connectionString: 'postgres://postgres@127.0.0.1:1/test',
      connectionTimeoutMillis: 1_000,
    });
    try {
      const store = new PostgresIdempotencyStore({ pool: deadPool });
      await assert.rejects(
        store.prepare(),
        (error: unknown) =>
          error instanceof IdempotencyStoreError &&
          error.operation === 'prepare' &&
          error.cause instanceof Error,
      );
    } finally {
      await deadPool.end();
    }
  });

  it('re-creates its table if it is dropped while in use', async () => {
    const name = tableName();
    // No background sweep: one running late, after the DROP, would hit the missing table first and
    // re-create it, and the claim below would not see the failure (seen under load).
    const store = new PostgresIdempotencyStore({ pool, tableName: name, sweepIntervalMs: 0 });
    await store.claim('j', 60_000);
    await pool.query(`DROP TABLE "${name}"`);
    await assert.rejects(
      store.claim('k', 60_000),
      (error: unknown) => error instanceof IdempotencyStoreError && error.operation === 'claim',
    );
    assert.deepEqual(await store.claim('k', 60_000), { status: 'claimed' });
  });
});

describe('PostgresJoinStore retention', () => {
  let pool: Pool;
  const tables: string[] = [];
  const tableName = () => {
    const name = `warren_join_t_${randomBytes(4).toString('hex')}`;
    tables.push(name);
    return name;
  };
  /** Makes every row of these joins (their duties' rows too) look written `minutes` ago. */
  const age = (table: string, joins: string[], minutes: number) =>
    pool.query(
      `UPDATE "${table}" SET created_at = now() - $2 * interval '1 minute' WHERE split_part(join_id, '|', 1) = ANY($1)`,
      [joins, minutes],
    );
  const joinsIn = async (table: string) =>
    (
      await pool.query(`SELECT DISTINCT split_part(join_id, '|', 1) AS j FROM "${table}" ORDER BY 1`)
    ).rows.map((r) => r.j as string);

  before(() => {
    pool = new Pool({ connectionString: PG_URL, max: 5 });
  });
  afterEach(async () => {
    for (const name of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
  });
  after(() => pool.end());

  it('sweep() deletes the joins none of whose rows is newer than retentionMs, duties included, and keeps the rest', async () => {
    const table = tableName();
    const store = new PostgresJoinStore({ pool, tableName: table, retentionMs: 60_000, sweepIntervalMs: 0 });
    await store.prepare();
    const indexes = await pool.query('SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY 1', [
      table,
    ]);
    assert.deepEqual(
      indexes.rows.map((r) => r.indexname),
      [`${table}_created_at`, `${table}_pkey`],
    );
    await store.arrive('old-complete.1', 2, 0, { a: 1 });
    assert.equal((await store.arrive('old-complete.1', 2, 1, { b: 2 })).status, 'complete'); // + its duty row
    await store.arrive('old-open.1', 2, 0, null);
    await store.fail('old-faulted.1', 2, 0);
    await store.arrive('mixed.1', 2, 0, null); // its first branch long ago, its second just now
    await store.arrive('new.1', 2, 0, null);
    await age(table, ['old-complete.1', 'old-open.1', 'old-faulted.1', 'mixed.1'], 5);
    await store.arrive('mixed.1', 2, 1, null);

    assert.equal(await store.sweep(), 3 + 1 + 2); // complete: 2 branches + duty; open: 1; faulted: branch + flag
    assert.deepEqual(await joinsIn(table), ['mixed.1', 'new.1']);
    assert.equal(await store.sweep(), 0);
    // the join kept is whole: its first branch still counts
    assert.equal((await store.arrive('mixed.1', 2, 1, null)).status, 'complete');
  });

  it('keeps every row with retentionMs 0, and sweeps in the background of reports at most once per sweepIntervalMs', async () => {
    const kept = tableName();
    const keeper = new PostgresJoinStore({ pool, tableName: kept, retentionMs: 0, sweepIntervalMs: 1 });
    await keeper.prepare();
    await keeper.arrive('a.1', 2, 0, null);
    await age(kept, ['a.1'], 60 * 24 * 365);
    assert.equal(await keeper.sweep(), 0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await keeper.arrive('b.1', 2, 0, null);
    assert.deepEqual(await joinsIn(kept), ['a.1', 'b.1']);

    const swept = tableName();
    const sweeper = new PostgresJoinStore({
      pool,
      tableName: swept,
      retentionMs: 60_000,
      sweepIntervalMs: 1_500,
    });
    await sweeper.prepare();
    await sweeper.arrive('a.1', 2, 0, null);
    await age(swept, ['a.1'], 5);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    await sweeper.arrive('b.1', 2, 0, null); // past the interval: sweeps beside this report
    await waitFor(async () => ((await joinsIn(swept)).includes('a.1') ? undefined : true), {
      timeoutMs: 5_000,
      what: () => 'the background sweep of join a.1',
    });
    await sweeper.arrive('c.1', 2, 0, null);
    await age(swept, ['c.1'], 5);
    await sweeper.arrive('d.1', 2, 0, null); // within the interval: no sweep
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await joinsIn(swept), ['b.1', 'c.1', 'd.1']);
  });

  it('refuses a retention or sweep interval that is not a whole number of milliseconds >= 0', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => new PostgresJoinStore({ pool, retentionMs: bad }), ConfigurationError);
      assert.throws(() => new PostgresJoinStore({ pool, sweepIntervalMs: bad }), ConfigurationError);
    }
  });
});

/** Claims until it is granted (an expiry), with a deadline. */
async function waitForClaim(store: PostgresIdempotencyStore, id: string, timeoutMs = 5_000) {
  let last: Awaited<ReturnType<PostgresIdempotencyStore['claim']>> | undefined;
  return waitFor(
    async () => {
      last = await store.claim(id, 60_000);
      return last.status === 'claimed' ? last : undefined;
    },
    { timeoutMs, intervalMs: 25, what: () => `a claim of ${id} (last: ${JSON.stringify(last)})` },
  );
}
