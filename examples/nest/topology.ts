import { defineTopology } from '../../src';

/** One topic exchange; the email queue takes every `email.*` job. */
export const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
});
