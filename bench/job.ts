export interface Job {
  seq: number;
  /** CLOCK_MONOTONIC in µs: shared by all processes on the machine, so a worker process can subtract it. */
  sentAtUs: number;
  body: string;
}

const BODY = JSON.stringify({ userId: 'u-000000', template: 'welcome', locale: 'en-GB' });

export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export function makeJob(seq: number): Job {
  return { seq, sentAtUs: nowUs(), body: BODY };
}

export function makeJobs(count: number, firstSeq = 0): Job[] {
  const jobs = new Array<Job>(count);
  for (let i = 0; i < count; i++) jobs[i] = makeJob(firstSeq + i);
  return jobs;
}
