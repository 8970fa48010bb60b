import { defineTopology } from '../../../src';

/** The example's topology: one topic exchange, an email queue bound to `email.*`, a reports queue. */
export const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: {
    email: { bind: { exchange: 'jobs', pattern: 'email.*' } },
    reports: { bind: { exchange: 'jobs', pattern: 'report.*' } },
  },
});
