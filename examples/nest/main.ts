/**
 * The NestJS example, end to end: boots the app, POSTs /signup to itself, waits for the handler to
 * run, then shuts down gracefully and exits 0 (1 if anything failed or took more than 15 s).
 *
 *   npm run build && node dist/examples/nest/main.js      (AMQP_URL defaults to the local broker)
 */
import { once } from 'node:events';
import { NestFactory } from '@nestjs/core';
import { Warren } from '../../src';
import { closeAndDeleteTopology } from '../../src/testing';
import { AppModule } from './app.module';
import { Mailer } from './mailer.service';

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks(); // SIGTERM/SIGINT: stop consuming, finish running jobs, close
  await app.listen(0, '127.0.0.1');
  const url = await app.getUrl();
  console.log(`nest example: app listening on ${url}, workers started`);

  const warren = app.get(Warren);
  const completed = once(warren, 'completed', { signal: AbortSignal.timeout(10_000) });
  const response = await fetch(`${url}/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userId: 'u42' }),
  });
  console.log(
    `nest example: POST /signup answered ${response.status} ${JSON.stringify(await response.json())}`,
  );
  if (response.status !== 202) throw new Error(`POST /signup answered ${response.status}`);

  const [event] = (await completed) as [{ jobId: string; durationMs: number }];
  const sent = app.get(Mailer).sent;
  console.log(
    `nest example: job ${event.jobId} completed in ${event.durationMs} ms; mailer sent ${sent.length} email(s)`,
  );

  // A real app keeps its queues; the example removes its namespace so CI leaves the broker clean.
  await closeAndDeleteTopology(warren);
  await app.close();
  console.log('nest example: closed gracefully');
}

const deadline = setTimeout(() => {
  console.error('nest example: FAILED, no result within 15 s');
  process.exit(1);
}, 15_000);
deadline.unref();

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('nest example: FAILED', error);
    process.exit(1);
  },
);
