// The test tiers scripts/node-test.mjs runs by name, and which integration files must run alone.
//
// Integration files run in two passes: first every file not listed in SERIAL, several at a time in
// parallel processes (each test has its own namespace, connection names and broker users, so they do
// not see each other); then the SERIAL files one after another, while nothing else loads the broker or
// the machine. A file belongs in SERIAL when it
//   - calls `rabbitmqctl` (closeConnectionsNamed): each call starts an Erlang VM that takes a core for about
//     a second, and force-closing connections is what it tests (broker users are made through the
//     management API: test/support/broker-user.ts),
//   - kills processes or connections and asserts how fast the rest takes over,
//   - asserts a timing that the machine's load moves (a latency percentile, a failover in under 1 s),
//   - starts a broker node of its own (none of test/integration does: test/resilience is all serial).
// A flaky file whose cause is a test bug (a fixed sleep, a shared name) gets the bug fixed, not a place
// here. node-test.mjs refuses to run a file that calls a `rabbitmqctl` helper without being listed, and
// a listed file that no longer exists.

/**
 * Each tier: its folder under dist/test, its per-test timeout, and how many files run at once. Integration
 * runs 3 at a time: on a 2-core machine shared with other load (load average 1 to 12), its 39 concurrent
 * files took 67, 84 and 128 s 3 at a time, 101 and 120 s 4 at a time, 118 s 2 at a time and 251 s one at a
 * time; the tests mostly wait on the broker, and 4 gained nothing over 3. Unit files run 2 at a time (one
 * per core): 7-11 s instead of 14 s, three runs alike. The fault files share one standalone private node
 * (`sharesPrivateNodes`, test/support/private-broker.ts), which the pass cleans when it ends.
 */
export const TIERS = {
  unit: { folder: 'unit', timeoutMs: 120_000, concurrency: 2 },
  integration: { folder: 'integration', timeoutMs: 120_000, concurrency: 3 },
  packaging: { folder: 'packaging', timeoutMs: 600_000, concurrency: 1 },
  faults: { folder: 'resilience', timeoutMs: 600_000, concurrency: 1, sharesPrivateNodes: true },
};

/** Integration files that run alone, after the concurrent pass, each with its reason. */
export const SERIAL = {
  'test/integration/awaited-results.test.ts':
    'force-closes its connections with rabbitmqctl (closeConnectionsNamed) mid-wait',
  'test/integration/bad-input.test.ts': 'asserts the p99 confirm latency of unrelated publishes',
  'test/integration/circuit-breaker.test.ts':
    'counts the calls that reach the dependency per half-open of 600 ms breakers; once in CI (concurrent pass) one call more came through, cause not found',
  'test/integration/cron-leader.test.ts':
    'SIGKILLs the leader among three forked workers and asserts a failover in under 1 s',
  'test/integration/cron-registry.test.ts':
    'force-closes connections with rabbitmqctl (closeConnectionsNamed)',
  'test/integration/job-events.test.ts':
    "force-closes a subscriber process's connection with rabbitmqctl (closeConnectionsNamed)",
  'test/integration/deduplicated-publishing.test.ts':
    'force-closes connections with rabbitmqctl (closeConnectionsNamed)',
  'test/integration/hostile-messages.test.ts': 'asserts unrelated publishes stay under 1 s meanwhile',
  'test/integration/job-control.test.ts': 'force-closes connections with rabbitmqctl (closeConnectionsNamed)',
  'test/integration/ordered-partitions.test.ts':
    'SIGTERMs one of three forked workers and asserts its partitions move to the others within 5 s',
  'test/integration/per-key-limits-isolation.test.ts':
    "SIGKILLs one of three forked workers, and asserts the light keys' rate beside a saturated key (>= 0.9x alone)",
  'test/integration/per-key-limit-overrides.test.ts':
    'asserts a raised per-key rate shows in the workers within 1 s of the confirm',
  'test/integration/progress.test.ts': 'force-closes connections with rabbitmqctl (closeConnectionsNamed)',
  'test/integration/recovery.test.ts':
    'force-closes its connection with rabbitmqctl (closeConnectionsNamed) and waits out the reconnect',
  'test/integration/trusted-records.test.ts':
    'about 55 s alone (a fuzz of 1,000 forged records, reads bounded in time); beside the concurrent pass at load 10 it passed the 120 s a file may take',
};

/** What in a test file's compiled source means it calls `rabbitmqctl`, so it must be in SERIAL. */
export const NEEDS_SERIAL = /\b(closeConnectionsNamed|rabbitmqctl)\b/;
