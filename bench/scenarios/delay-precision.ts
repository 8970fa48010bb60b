import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender } from '../adapters/contender';
import { makeJob, nowUs, type Job } from '../lib/job';
import { measure } from '../lib/measure';
import type { SingleDelayGroup, Sizes } from '../lib/options';
import { percentile, sortedCopy } from '../lib/stats';
import type { MetricSpec, Scenario } from './scenario';

/** Delays at or above this are sent spaced out rather than one after the other (see `singleDelays`). */
const SPACED_FROM_MS = 10_000;
/** A sample given up on: an unexpected loss must fail the run, not stall it. */
const GRACE_MS = 30_000;

interface Sample {
  delayMs: number;
  publishUs: number;
  confirmUs: number;
  arrivedUs: number;
  arrived: Promise<void>;
}

/** Handler start → lateness past the delay rounded up to the contender's unit, from publish and confirm. */
class Samples {
  private readonly bySeq = new Map<number, Sample & { resolve: () => void }>();

  constructor(private readonly unitMs: number) {}

  arrive(job: Job): void {
    const sample = this.bySeq.get(job.seq);
    if (!sample || sample.arrivedUs) return;
    sample.arrivedUs = nowUs();
    sample.resolve();
  }

  async send(contender: Contender, seq: number, delayMs: number, alone: boolean): Promise<Sample> {
    let resolve!: () => void;
    const arrived = new Promise<void>((r) => (resolve = r));
    const sample = { delayMs, publishUs: nowUs(), confirmUs: 0, arrivedUs: 0, arrived, resolve };
    this.bySeq.set(seq, sample);
    const publish =
      alone && contender.publishDelayedAlone ? contender.publishDelayedAlone : contender.publishDelayed;
    await publish!.call(contender, makeJob(seq), delayMs);
    sample.confirmUs = nowUs();
    return sample;
  }

  /** ms late, from the publish call or from the confirm. */
  lateness(sample: Sample, from: 'publish' | 'confirm'): number {
    const rounded = Math.ceil(sample.delayMs / this.unitMs) * this.unitMs;
    const startUs = from === 'publish' ? sample.publishUs : sample.confirmUs;
    return (sample.arrivedUs - startUs) / 1000 - rounded;
  }
}

function label(delayMs: number): string {
  return delayMs >= 60_000 ? `${delayMs / 60_000} min` : `${delayMs / 1000} s`;
}

function withDeadline(promise: Promise<void>, ms: number, what: string): Promise<void> {
  return Promise.race([
    promise,
    sleep(ms, undefined, { ref: false }).then(() => {
      throw new Error(`${what} did not arrive within ${ms} ms of its delay`);
    }),
  ]);
}

/**
 * Single delayed jobs, nothing else running: each group's samples go one after the other (the next
 * published once the previous ran), except delays of 10 s and more, whose samples are published
 * spaced out so that each still fires alone (all published before the first fires, firings apart by
 * the spacing). The longest group (1 min) is published first and the shorter groups run while it
 * waits, as long as they finish before its first sample fires: the scenario takes about as long as
 * its longest delay plus a few seconds, not the sum of all samples.
 */
export function delayPrecisionSingle(sizes: Sizes): Scenario {
  const groups = sizes.singleDelays;
  const metrics: MetricSpec[] = groups.flatMap(({ delayMs }) => [
    { key: `pub${delayMs}`, label: `${label(delayMs)}: max late ms (publish)`, digits: 1, noRatio: true },
    { key: `conf${delayMs}`, label: `${label(delayMs)}: max late ms (confirm)`, digits: 1, noRatio: true },
  ]);
  metrics.unshift({ key: 'worstMs', label: 'worst late ms (publish)', digits: 1, noRatio: true });
  const longest = Math.max(...groups.map((g) => g.delayMs));
  return {
    id: 6,
    key: '6-single',
    title: `Single delayed jobs, one at a time: ${groups.map((g) => `${g.samples} × ${label(g.delayMs)}`).join(', ')}; lateness past the delay rounded up to the unit`,
    features: { delays: true },
    rounds: 1,
    timeoutMs: longest * 2 + 240_000,
    requires: [['publishDelayed', 'publishDelayedAlone']],
    metrics,
    async run({ contender, brokers }) {
      const samples = new Samples(contender.delayUnitMs ?? 1);
      const consumer = await contender.consume(1, (job) => samples.arrive(job));
      try {
        const {
          value: byGroup,
          wallMs,
          cpu,
        } = await measure(brokers, () => runGroups(contender, samples, groups));
        const outcome: Record<string, number> = { worstMs: -Infinity };
        for (const [delayMs, taken] of byGroup) {
          outcome[`pub${delayMs}`] = Math.max(...taken.map((s) => samples.lateness(s, 'publish')));
          outcome[`conf${delayMs}`] = Math.max(...taken.map((s) => samples.lateness(s, 'confirm')));
          outcome.worstMs = Math.max(outcome.worstMs, outcome[`pub${delayMs}`]);
        }
        const jobs = groups.reduce((n, g) => n + g.samples, 0);
        return { metrics: outcome, cpu, wallMs, jobs };
      } finally {
        await consumer.stop();
      }
    },
  };
}

async function runGroups(
  contender: Contender,
  samples: Samples,
  groups: SingleDelayGroup[],
): Promise<Map<number, Sample[]>> {
  const byGroup = new Map<number, Sample[]>();
  let seq = 0;
  const isSpaced = (g: SingleDelayGroup) => g.delayMs >= SPACED_FROM_MS;
  const spaced = groups.filter(isSpaced).sort((a, b) => b.delayMs - a.delayMs);
  const serial = groups.filter((g) => !isSpaced(g)).sort((a, b) => a.delayMs - b.delayMs);
  // the longest group first; the others run in its wait only if they end well before it fires
  const [first, ...rest] = spaced;
  let waiting: { firesAt: number; done: Promise<Sample[]> } | undefined;
  if (first) {
    const firesAt = Date.now() + first.delayMs;
    const { done } = await sendSpaced(contender, samples, first, seq);
    waiting = { firesAt, done };
    seq += first.samples;
  }
  for (const group of [...rest, ...serial]) {
    const estimateMs = isSpaced(group)
      ? group.delayMs + (group.samples - 1) * spacingOf(group) + 1_000
      : group.samples * (group.delayMs + 100) + 1_000;
    if (waiting && Date.now() + estimateMs > waiting.firesAt - 2_000) {
      byGroup.set(first!.delayMs, await waiting.done);
      waiting = undefined;
    }
    const taken = isSpaced(group)
      ? await (await sendSpaced(contender, samples, group, seq)).done
      : await sendSerial(contender, samples, group, seq);
    byGroup.set(group.delayMs, taken);
    seq += group.samples;
  }
  if (waiting) byGroup.set(first!.delayMs, await waiting.done);
  return byGroup;
}

async function sendSerial(
  contender: Contender,
  samples: Samples,
  group: SingleDelayGroup,
  firstSeq: number,
): Promise<Sample[]> {
  const taken: Sample[] = [];
  for (let i = 0; i < group.samples; i++) {
    const sample = await samples.send(contender, firstSeq + i, group.delayMs, true);
    await withDeadline(sample.arrived, group.delayMs + GRACE_MS, `delayed job ${firstSeq + i}`);
    taken.push(sample);
  }
  return taken;
}

/** Spacing between the samples of a spaced group: all sent before the first fires. */
function spacingOf(group: SingleDelayGroup): number {
  return Math.min(2_000, Math.floor(group.delayMs / group.samples / 100) * 100);
}

/** Resolves once every sample is published (and confirmed), with a promise of their arrival. */
async function sendSpaced(
  contender: Contender,
  samples: Samples,
  group: SingleDelayGroup,
  firstSeq: number,
): Promise<{ done: Promise<Sample[]> }> {
  const spacing = spacingOf(group);
  const sent: Promise<Sample>[] = [];
  const start = Date.now();
  for (let i = 0; i < group.samples; i++) {
    const wait = start + i * spacing - Date.now();
    if (wait > 0) await sleep(wait);
    sent.push(samples.send(contender, firstSeq + i, group.delayMs, true));
  }
  const taken = await Promise.all(sent);
  const arrivals = taken.map((s, i) =>
    withDeadline(s.arrived, group.delayMs + GRACE_MS, `delayed job ${firstSeq + i}`),
  );
  const done = Promise.all(arrivals).then(() => taken);
  done.catch(() => undefined); // awaited later; a loss must not surface as an unhandled rejection first
  return { done };
}

/**
 * A burst of `delayJobs` delayed jobs published at once, random delays (seeded, the same for every
 * contender and round) between 100 ms and `delayMaxMs`: lateness past each delay rounded up to the
 * contender's unit, from the publish call and from the confirm.
 */
export function delayBurst(sizes: Sizes): Scenario {
  const total = sizes.delayJobs;
  const delays = seededDelays(total, 100, sizes.delayMaxMs);
  return {
    id: 6,
    key: '6-delay',
    title: `Delayed jobs: ${total} published at once, random delays 0.1–${sizes.delayMaxMs / 1000} s, lateness past the delay rounded up to the unit`,
    features: { delays: true },
    timeoutMs: Math.max(sizes.runTimeoutMs, sizes.delayMaxMs + 60_000),
    requires: ['publishDelayed'],
    metrics: [
      { key: 'p99Ms', label: 'late p99 ms (confirm)', digits: 0 },
      { key: 'p50Ms', label: 'late p50 ms (confirm)', digits: 0 },
      { key: 'maxMs', label: 'late max ms (confirm)', digits: 0 },
      { key: 'pubP99Ms', label: 'late p99 ms (publish)', digits: 0 },
      { key: 'pubMaxMs', label: 'late max ms (publish)', digits: 0 },
    ],
    async run({ contender, brokers }) {
      const samples = new Samples(contender.delayUnitMs ?? 1);
      const consumer = await contender.consume(100, (job) => samples.arrive(job));
      try {
        const {
          value: taken,
          wallMs,
          cpu,
        } = await measure(brokers, async () => {
          const sent = await Promise.all(delays.map((d, seq) => samples.send(contender, seq, d, false)));
          await Promise.all(sent.map((s) => withDeadline(s.arrived, sizes.delayMaxMs + GRACE_MS, 'burst')));
          return sent;
        });
        const conf = sortedCopy(taken.map((s) => samples.lateness(s, 'confirm')));
        const pub = sortedCopy(taken.map((s) => samples.lateness(s, 'publish')));
        return {
          metrics: {
            p99Ms: percentile(conf, 99),
            p50Ms: percentile(conf, 50),
            maxMs: conf[total - 1],
            pubP99Ms: percentile(pub, 99),
            pubMaxMs: pub[total - 1],
          },
          cpu,
          wallMs,
          jobs: total,
        };
      } finally {
        await consumer.stop();
      }
    },
  };
}

/** mulberry32: the same "random" delays in every run. */
function seededDelays(count: number, minMs: number, maxMs: number): number[] {
  let state = 0x9e3779b9;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: count }, () => Math.round(minMs + next() * (maxMs - minMs)));
}
