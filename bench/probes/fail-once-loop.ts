/**
 * A probe for issue 30's retry rows, outside the bench's runner: bare amqplib's fail-once loop (30,000 jobs
 * pre-filled, prefetch 100, each first attempt republished with an attempt header on a confirm channel and
 * acked on its confirm) on a plain classic queue, round after round beside the same loop on warren's job
 * queue of a namespace declared either once for all rounds or afresh right before each round (and deleted
 * after it), as the bench's contenders do. Prints jobs/s per round.
 *
 *   npm run build && node dist/bench/probes/fail-once-loop.js [amqp-url] [rounds]
 */
import * as amqp from 'amqplib';
import { createWarren } from '../../src';
import { createNaming } from '../../src/topology';
import { benchTopology } from '../adapters/warren';
import { failOnceRound, probeArguments, roundOnClassicQueue, runProbe } from './fail-once-round';

const PLAIN_QUEUE = 'probe-plain';

/** warren's namespace as the bench declares it for a classic retry row without a backoff. */
function namespaceWarren(url: string, namespace: string) {
  return createWarren({
    url,
    namespace,
    topology: benchTopology({ queueType: 'classic', jobsExchange: true }),
    delay: { queueType: 'classic', levels: 4 },
    jobs: [],
  });
}

async function main(): Promise<void> {
  const args = probeArguments('fail-once-loop');
  if (!args) return;
  const { url, rounds } = args;
  const connection = await amqp.connect(url);
  const kept = await namespaceWarren(url, 'probe-kept');
  const results = { plain: [] as number[], keptNamespace: [] as number[], freshNamespace: [] as number[] };
  try {
    for (let round = 0; round < rounds; round++) {
      results.plain.push(await roundOnClassicQueue(connection, PLAIN_QUEUE));
      results.keptNamespace.push(await failOnceRound(connection, createNaming('probe-kept').queue('jobs')));
      const namespace = `probe-fresh-${round}`;
      const fresh = await namespaceWarren(url, namespace);
      try {
        results.freshNamespace.push(await failOnceRound(connection, createNaming(namespace).queue('jobs')));
      } finally {
        await fresh.deleteTopology();
        await fresh.close();
      }
    }
  } finally {
    await kept.deleteTopology();
    await kept.close();
    await connection.close();
  }
  console.log(`fail-once jobs/s per round on ${new URL(url).host}: ${JSON.stringify(results)}`);
}

runProbe('fail-once probe', main);
