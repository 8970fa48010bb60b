// @ts-check
/**
 * The quickstart in plain JavaScript: no compiler, no decorators, only the built package (`npm run build`,
 * then `node examples/plain-js/main.mjs`; an app that installed warren runs the same file). A job is a
 * function given to defineJob; the same value is what the worker runs and what the publisher names.
 */
import { createWarren, defineJob, defineTopology } from 'warren';

const topology = defineTopology({ queues: { email: {} } });

/** @type {string[]} */
const sent = [];
const welcomeEmail = defineJob(
  'email.welcome',
  { queue: 'email', attempts: 3, backoff: { type: 'fixed', delayMs: 200 } },
  /** @param {{ email: string }} data the payload (JSDoc types it for editors; optional) */
  async (data, ctx) => {
    // The first attempt fails, as a flaky mail server would: warren retries it after 200 ms.
    if (ctx.attempt === 1) throw new Error('mail server busy');
    sent.push(data.email);
    ctx.log.info('welcome email sent');
    return { sentTo: data.email, attempt: ctx.attempt };
  },
);

const warren = await createWarren({
  url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  namespace: 'warren-example-plain-js',
  topology,
  handlers: [welcomeEmail],
});
warren.on('retried', (job) => console.log(`  retry: ${job.name} attempt ${job.attempt} failed, retrying`));
await warren.start();

await warren.publish(welcomeEmail, { email: 'ada@example.com' }, { jobId: 'welcome-ada' });
const handle = await warren.publishWithResult(welcomeEmail, { email: 'grace@example.com' });
console.log('result:', JSON.stringify(await handle.result({ timeoutMs: 10_000 })));
while (sent.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));

await warren.deleteTopology(); // the example leaves nothing behind on the broker
await warren.close();
console.log(`done: ${sent.length} emails sent from plain JavaScript`);
