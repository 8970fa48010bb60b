/**
 * The dashboard example: the signup example's worker (welcome emails, a monthly report that always
 * fails and ends in the dead-letter log) with the dashboard beside it. Run with `npm run example:dashboard`,
 * open the URL it prints, stop it with Ctrl-C. DASHBOARD_PORT picks the port (default 3000).
 */
import { ConnectionError, createWarren } from '../../src';
import { createOps } from '../../src/ops';
import { startDashboardServer } from '../../src/ui';
import { MonthlyReport } from '../signup/jobs/monthly-report';
import { type Mailer, WelcomeEmail } from '../signup/jobs/welcome-email';
import { topology } from '../signup/topology';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const namespace = 'warren-dashboard-example';
const quietMailer: Mailer = { send: async () => undefined };

async function main(): Promise<void> {
  const config = { url, namespace, topology, jobs: [WelcomeEmail, MonthlyReport], deadLetterLog: {} };
  const warren = await createWarren({
    ...config,
    history: {},
    handlers: [new WelcomeEmail(quietMailer), new MonthlyReport()],
    connection: { connectTimeoutMs: 3000 },
  }).catch((error: unknown) => {
    if (error instanceof ConnectionError) {
      console.error(`Cannot reach RabbitMQ at ${error.urls.join(', ')}: start one or set AMQP_URL.`);
      process.exit(1);
    }
    throw error;
  });
  await warren.start();
  const ops = createOps(config);
  const server = await startDashboardServer({
    ops,
    port: Number(process.env.DASHBOARD_PORT ?? 3000),
    // For the example only: every direct loopback client (anyone on this machine) is an operator (replay,
    // pause, resume), and the page says so on every view. A real app gives `authorize` instead, reading
    // its own session and naming the user; without either the dashboard is read-only.
    loopbackRole: 'operator',
  });
  for (const [i, email] of ['ada@example.com', 'grace@example.com', 'linus@example.com'].entries())
    await warren.publish('email.welcome', { userId: String(i + 1), email });
  await warren.publish(MonthlyReport, { month: '2026-11' });
  console.log(`warren dashboard: ${server.url} (Ctrl-C stops it)`);

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  await ops.close();
  await warren.deleteTopology();
  await warren.close();
  console.log('dashboard example stopped');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
