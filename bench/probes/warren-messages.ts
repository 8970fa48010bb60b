import { randomUUID } from 'node:crypto';
import { HEADERS, jobProperties, republishProperties } from '../../src/message';
import type { RoundMessages } from './fail-once-round';

/** warren's messages, as its publisher and its republisher make them. */
export const WARREN_MESSAGES: RoundMessages = {
  first: () =>
    jobProperties({
      name: 'bench.job',
      jobId: randomUUID(),
      body: Buffer.alloc(0), // jobProperties does not read it
      attempt: 1,
      enqueuedAt: Date.now(),
    }),
  retry: (delivered) => republishProperties(delivered, { [HEADERS.attempt]: 2 }),
  isRetry: (delivered) => delivered.headers?.[HEADERS.attempt] === 2,
};
