import { makeJobs } from '../lib/job';
import { measure } from '../lib/measure';
import type { Sizes } from '../lib/options';
import { JOBS_PER_SEC, Scenario } from './scenario';

export function enqueueBulk(sizes: Sizes): Scenario {
  return {
    id: 3,
    key: '3',
    title: `Enqueue in bulk: batch API if any, else concurrent publishes (${sizes.bulkPublishes.toLocaleString('en')} jobs)`,
    metrics: [JOBS_PER_SEC],
    async run({ contender, brokers }) {
      await contender.publishBulk(makeJobs(Math.min(1_000, sizes.bulkPublishes)));
      const jobs = makeJobs(sizes.bulkPublishes);
      const { wallMs, cpu } = await measure(brokers, () => contender.publishBulk(jobs));
      return { metrics: { jobsPerSec: (jobs.length / wallMs) * 1000 }, cpu, wallMs, jobs: jobs.length };
    },
  };
}
