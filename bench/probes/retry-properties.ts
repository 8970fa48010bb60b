/**
 * A probe for issue 30's retry rows: what do warren's message properties cost the broker on the retry path
 * (RabbitMQ 4.3 and 3.10)? Bare amqplib's fail-once loop (see fail-once-round.ts) at backoff 0 on one classic queue,
 * each failed first attempt republished straight back to it, with the messages of raw amqplib (two
 * properties, an attempt header), of warren's wire contract (its publisher's properties, its republished copy:
 * src/message), of warren's contract less one part each or with its two headers folded into one, and of raw
 * amqplib's with a second header (does the broker pay per header?). The shapes alternate round by round, in an
 * order that turns each round; prints jobs/s per round, the medians, and each median beside raw amqplib's.
 *
 *   npm run build && node dist/bench/probes/retry-properties.js [amqp-url] [rounds]
 */
import * as amqp from 'amqplib';
import { HEADERS, republishProperties } from '../../src/message';
import {
  printBesideFirst,
  probeArguments,
  RAW_MESSAGES,
  type RoundMessages,
  roundOnClassicQueue,
  runProbe,
  turningRounds,
} from './fail-once-round';
import { WARREN_MESSAGES } from './warren-messages';

const QUEUE = 'probe-retry-properties';

/** `messages` with `change` applied to both the job's and the copy's properties (a copy of them). */
function reshaped(
  messages: RoundMessages,
  change: (properties: amqp.Options.Publish) => void,
): RoundMessages {
  const changed = (properties: amqp.Options.Publish) => {
    const copy = { ...properties, headers: { ...properties.headers } };
    change(copy);
    return copy;
  };
  return {
    first: (i) => changed(messages.first(i)),
    retry: (delivered) => changed(messages.retry(delivered)),
    isRetry: messages.isRetry,
  };
}

const warrenWithout = (drop: (properties: amqp.Options.Publish) => void) => reshaped(WARREN_MESSAGES, drop);

/** A header that is not the attempt's, as warren's `warren-enqueued-at` (ms since epoch) is. */
const SECOND_HEADER = 'probe-enqueued-at';

const FOLDED = 'probe-run';

/**
 * warren's contract with its two headers folded into one string, `<attempt>.<enqueued-at>`: is the broker's
 * cost the number of header entries?
 */
const WARREN_ONE_HEADER: RoundMessages = {
  ...reshaped(WARREN_MESSAGES, (properties) => {
    const headers = properties.headers ?? {};
    headers[FOLDED] = `${headers[HEADERS.attempt]}.${headers[HEADERS.enqueuedAt]}`;
    delete headers[HEADERS.attempt];
    delete headers[HEADERS.enqueuedAt];
  }),
  retry: (delivered) => {
    const [, enqueuedAt] = String(delivered.headers?.[FOLDED]).split('.');
    return { ...republishProperties(delivered, {}), headers: { [FOLDED]: `2.${enqueuedAt}` } };
  },
  isRetry: (delivered) => String(delivered.headers?.[FOLDED]).startsWith('2.'),
};

const SHAPES: ReadonlyArray<readonly [string, RoundMessages]> = [
  ['raw amqplib', RAW_MESSAGES],
  ["warren's contract", WARREN_MESSAGES],
  ['warren, no mandatory', warrenWithout((p) => delete p.mandatory)],
  [
    'warren, no type + timestamp',
    warrenWithout((p) => {
      delete p.type;
      delete p.timestamp;
    }),
  ],
  ['warren, no message_id', warrenWithout((p) => delete p.messageId)],
  ['warren, no enqueued-at', warrenWithout((p) => delete p.headers?.[HEADERS.enqueuedAt])],
  ['warren, its two headers in one', WARREN_ONE_HEADER],
  [
    'raw amqplib + a second header',
    reshaped(RAW_MESSAGES, (p) => {
      p.headers = { ...p.headers, [SECOND_HEADER]: Date.now() };
    }),
  ],
];

async function main(): Promise<void> {
  const args = probeArguments('retry-properties');
  if (!args) return;
  const connection = await amqp.connect(args.url);
  try {
    const rates = await turningRounds(SHAPES, args.rounds, ([, messages]) =>
      roundOnClassicQueue(connection, QUEUE, messages),
    );
    console.log(
      `fail-once jobs/s at backoff 0 on a classic queue of ${new URL(args.url).host}, by message shape:`,
    );
    printBesideFirst(
      SHAPES.map(([label]) => label),
      rates,
      'raw',
    );
  } finally {
    await connection.close();
  }
}

runProbe('retry-properties probe', main);
