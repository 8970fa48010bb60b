import type { Sizes } from '../lib/options';
import { consume } from './consume';
import { e2eLatency } from './e2e-latency';
import { enqueueBulk } from './enqueue-bulk';
import { enqueueConcurrent, enqueueSerial } from './enqueue-awaited';
import { memory } from './memory';
import { delayBurst, delayPrecisionSingle } from './delay-precision';
import { followUpPublish } from './follow-up';
import { retryCost } from './retries-and-delays';
import type { Scenario } from './scenario';

/** In run order. */
export function buildScenarios(sizes: Sizes): Scenario[] {
  return [
    enqueueSerial(sizes),
    enqueueConcurrent(sizes),
    enqueueBulk(sizes),
    consume(sizes, 1),
    consume(sizes, 10),
    consume(sizes, 100),
    e2eLatency(sizes),
    delayPrecisionSingle(sizes),
    delayBurst(sizes),
    retryCost(sizes),
    memory(sizes),
    followUpPublish(sizes),
  ];
}
