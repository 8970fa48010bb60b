import type { Sizes } from '../options';
import { consume } from './consume';
import { e2eLatency } from './e2e-latency';
import { enqueueBulk } from './enqueue-bulk';
import { enqueueConcurrent, enqueueSerial } from './enqueue-awaited';
import { memory } from './memory';
import { delayLateness, retryCost } from './retries-and-delays';
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
    delayLateness(sizes),
    retryCost(sizes),
    memory(sizes),
  ];
}
