import { performance } from 'node:perf_hooks';
import type { BrokerPids } from './broker-processes';
import { CpuTimes, startCpuSample } from './cpu';

export interface Measured<T> {
  value: T;
  wallMs: number;
  cpu: CpuTimes;
}

/** Wall time and CPU time (this process and the brokers) of `work`. */
export async function measure<T>(brokers: BrokerPids, work: () => Promise<T>): Promise<Measured<T>> {
  const cpu = startCpuSample(brokers);
  const start = performance.now();
  const value = await work();
  const wallMs = performance.now() - start;
  return { value, wallMs, cpu: cpu.stop() };
}
