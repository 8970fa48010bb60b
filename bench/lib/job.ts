export interface Job {
  seq: number;
  /** CLOCK_MONOTONIC in µs: shared by all processes on the machine, so a worker process can subtract it. */
  sentAtUs: number;
  body: string;
}

const BODY = JSON.stringify({ userId: 'u-000000', template: 'welcome', locale: 'en-GB' });

/** `small`: about 120 bytes of JSON a job; `1k`: 1 KiB. */
export type Payload = 'small' | '1k';
export const PAYLOADS: readonly Payload[] = ['small', '1k'];
const BODIES: Record<Payload, string> = { small: BODY, '1k': BODY.padEnd(1024 - 60, ' ') };

export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export function makeJob(seq: number, payload: Payload = 'small'): Job {
  return { seq, sentAtUs: nowUs(), body: BODIES[payload] };
}

export function makeJobs(count: number, firstSeq = 0, payload: Payload = 'small'): Job[] {
  const jobs = new Array<Job>(count);
  for (let i = 0; i < count; i++) jobs[i] = makeJob(firstSeq + i, payload);
  return jobs;
}
