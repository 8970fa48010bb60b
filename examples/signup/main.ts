/**
 * The quickstart example: a signup service publishes `email.welcome`, a worker sends it, and a
 * monthly report that always fails ends in the dead-letter queue. Run with `npm run example`.
 */
import { ConnectionError, createWarren, type Warren } from '../../src';
import { MonthlyReport } from './jobs/monthly-report';
import { WelcomeEmail, type Mailer } from './jobs/welcome-email';
import { SignupService } from './signup-service';
import { topology } from './topology';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const consoleMailer: Mailer = {
  async send(to, template) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    console.log(`  mailer: sent '${template}' to ${to}`);
  },
};

async function main(): Promise<void> {
  let warren: Warren;
  try {
    warren = await createWarren({
      url,
      namespace: 'warren-example',
      topology,
      handlers: [new WelcomeEmail(consoleMailer), new MonthlyReport()],
      connection: { connectTimeoutMs: 3000 },
    });
  } catch (error) {
    if (error instanceof ConnectionError) {
      console.error(
        `Cannot reach RabbitMQ at ${error.urls.join(', ')}. Start one with \`docker compose up -d\` (or \`rabbitmq-server -detached\`), or set AMQP_URL.`,
      );
      process.exit(1);
    }
    throw error;
  }
  warren.closeOnSignals();

  let welcomed = 0;
  warren.on('completed', (job) => {
    if (job.name === 'email.welcome') welcomed += 1;
  });
  warren.on('retried', (job) =>
    console.log(
      `  retry: ${job.name} attempt ${job.attempt} failed, attempt ${job.nextAttempt} in ${job.delayMs} ms`,
    ),
  );
  const deadLettered = new Promise<void>((resolve) =>
    warren.on('deadLettered', (job) => {
      console.log(`  dead letter: ${job.name} (${job.reason})`);
      resolve();
    }),
  );

  await warren.start();
  const signups = new SignupService(warren);
  const started = Date.now();
  for (const [id, email] of [
    ['1', 'ada@example.com'],
    ['2', 'grace@example.com'],
    ['3', 'linus@example.com'],
  ] as const)
    await signups.signUp(id, email);
  console.log(`published 3 welcome emails in ${Date.now() - started} ms (each confirmed by the broker)`);
  await warren.publish(MonthlyReport, { month: '2026-11' });
  console.log('published report.monthly (its API is down: it will fail twice and be dead-lettered)');

  await deadLettered;
  while (welcomed < 3) await new Promise((resolve) => setTimeout(resolve, 50));
  const letters = await warren.deadLetters.list('reports');
  for (const letter of letters)
    console.log(
      `dead-letter queue 'reports': ${letter.name} after ${letter.attempt} attempts, reason ${letter.reason}: ${letter.lastError?.split('\n')[0]}`,
    );

  // The example leaves nothing behind on the broker.
  await warren.deleteTopology();
  await warren.close();
  console.log('done: 3 emails sent, 1 job dead-lettered');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
