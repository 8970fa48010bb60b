import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { laneOf } from '../../src/message';
import { ChildWorkers } from '../fixtures/child-workers';
import {
  candidates,
  endedOf,
  keyLimitFleet,
  mostAtOnce,
  PARTITIONS,
  startLag,
  throughput,
} from '../fixtures/key-limit-ledger';
import { type KeyLimitWorkerMessage } from '../fixtures/key-limit-worker';
import { cleanup } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/**
 * Per-key limits (docs/guide/per-key-limits.md) with 3 worker processes: a key at its cap costs the other keys of
 * its partition nothing, and a worker SIGKILLed while it runs a key frees the key's slot.
 */
describe('per-key limits: other keys and a killed owner', () => {
  const workers = new ChildWorkers<KeyLimitWorkerMessage>('../fixtures/key-limit-worker');
  afterEach(async () => {
    await workers.killAll();
    await cleanup();
  });

  it('lets the other keys of a partition flow while a key is at its cap (no head-of-line blocking)', async (t) => {
    const { events, publish } = await keyLimitFleet(workers, { perKey: 1, concurrency: 8 });
    // the saturated key and two of the light keys share a partition; the other light keys are spread
    const hot = 'hot-key';
    const hotPartition = laneOf(hot, PARTITIONS);
    const sameAsHot = candidates((k) => laneOf(k, PARTITIONS) === hotPartition, 2);
    const elsewhere = candidates((k) => laneOf(k, PARTITIONS) !== hotPartition, 4);
    const light = [...sameAsHot, ...elsewhere];
    const perLight = 20;
    const lightRun = async (seq0: number) => {
      for (let seq = seq0; seq < seq0 + perLight; seq++)
        await Promise.all(light.map((key) => publish('limited.call', { key, seq, ms: 50 })));
      await waitFor(() => light.every((key) => endedOf(events, key, seq0, perLight) === perLight), {
        timeoutMs: 60_000,
        what: () => `the light keys' ${light.length * perLight} jobs to end`,
      });
      return throughput(events, light, seq0, perLight);
    };
    // a first round warms the fleet up (connections, JIT, the partitions' first deliveries): not measured
    await lightRun(2000);
    const alone = await lightRun(0);
    for (let seq = 0; seq < 150; seq++) await publish('limited.call', { key: hot, seq, ms: 50 });
    await waitFor(() => events.some((e) => e.key === hot && e.kind === 'start'), {
      what: 'the hot key to run',
    });
    const beside = await lightRun(1000);
    t.diagnostic(
      `light keys: ${alone.toFixed(1)} jobs/s alone, ${beside.toFixed(1)} beside the saturated key`,
    );
    const lags = startLag(events, light, 1000);
    t.diagnostic(
      `first starts beside it, ms after the earliest: in its partition ${lags.slice(0, 2).join(', ')}; elsewhere ${lags.slice(2).join(', ')}`,
    );
    assert.ok(
      beside >= 0.9 * alone,
      `the light keys ran ${beside.toFixed(1)} jobs/s beside the saturated key, ${alone.toFixed(1)} alone (>= 0.9x)`,
    );
    assert.ok(mostAtOnce(events, 'limited.call', hot) <= 1, 'the hot key kept its cap of 1');
    await waitFor(() => endedOf(events, hot, 0, 150) === 150, {
      timeoutMs: 120_000,
      what: () => `the hot key's 150 jobs to end (${endedOf(events, hot, 0, 150)})`,
    });
    const hotRuns = events.filter((e) => e.key === hot && e.kind === 'start');
    assert.ok(
      hotRuns.some((e) => e.limited === 'concurrency'),
      'some hot jobs were re-delayed for their cap',
    );
    assert.deepEqual(
      hotRuns.filter((e) => e.attempt !== 1),
      [],
      'waiting for the key spent no attempt',
    );
  });
  it('frees the slots of a worker SIGKILLed while it runs a key: its job runs again and the key goes on', async () => {
    const { events, children, publish } = await keyLimitFleet(workers, { perKey: 1, concurrency: 4 });
    const key = 'acct-killed';
    for (let seq = 0; seq < 4; seq++) await publish('limited.call', { key, seq, ms: 1500 });
    await waitFor(() => events.some((e) => e.key === key && e.kind === 'start'), {
      what: 'the key to start',
    });
    const first = events.find((e) => e.key === key && e.kind === 'start')!;
    const victim = children.find((c) => c.pid === first.pid)!;
    victim.child.kill('SIGKILL');
    const killedAt = performance.timeOrigin + performance.now();
    await victim.exited;
    await waitFor(() => endedOf(events, key, 0, 4) === 4, {
      timeoutMs: 60_000,
      what: () => `the key's 4 jobs to end after the kill (${endedOf(events, key, 0, 4)})`,
    });
    const rerun = events.find((e) => e.kind === 'end' && e.key === key && e.seq === first.seq);
    assert.ok(rerun && rerun.pid !== victim.pid, 'the killed run ran again on another worker');
    assert.ok(mostAtOnce(events, 'limited.call', key, killedAt) <= 1, 'the key never ran two jobs at once');
  });
});
