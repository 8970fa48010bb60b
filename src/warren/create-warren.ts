import { checkCronData } from '../scheduler';
import { resolveWarrenConfig } from './config';
import { WarrenEventSink } from './event-sink';
import { recordHistory } from './history';
import { instrumentationTarget } from './instrumentation';
import type { WarrenOptions } from './options';
import { Warren } from './warren';
import type { WarrenJobs } from './warren-jobs';
import { wireWarren } from './wiring';

/**
 * Creates a warren: checks every option and declaration, plans the topology, connects, declares the
 * topology and opens the publisher. Call `start()` to run handlers.
 *
 * In three steps: {@link resolveWarrenConfig} (pure: options to a validated configuration and plan),
 * `wireWarren` (the named parts and their reconnect steps), then connect and hand the parts to a Warren.
 *
 * @example
 * const warren = await createWarren({ url: process.env.AMQP_URL, topology, handlers: [new
 * WelcomeEmail(mailer)] });
 * await warren.start();
 * await warren.publish('email.welcome', { userId: '123' });
 * warren.closeOnSignals();
 */
export async function createWarren<TJobs extends object = WarrenJobs>(
  options: WarrenOptions = {},
): Promise<Warren<TJobs>> {
  const events = new WarrenEventSink();
  const config = resolveWarrenConfig(options, events.emit);
  await checkCronData(config.plan, config.cron);
  // A store that cannot work (database down, table of another shape) fails here, not on the first job.
  await options.idempotency?.prepare?.();
  await options.joins?.prepare?.();
  await options.deduplication?.prepare?.();
  const parts = await wireWarren(config, events);
  await parts.manager.start();

  const warren = new Warren<TJobs>(parts);
  events.connect(warren, config.log);
  if (parts.history) recordHistory(parts.history.writer, parts.history.options, warren);
  parts.outbox?.relay?.start();
  config.instrumentation?.attach?.(
    instrumentationTarget(
      warren,
      config.plan,
      parts.manager,
      () => parts.scheduling.isLeader,
      () => parts.worker.health(),
    ),
  );
  return warren;
}
