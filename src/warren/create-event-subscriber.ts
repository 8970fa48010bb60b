import 'reflect-metadata';
import { ConnectionManager } from '../connection';
import { resolveLogger } from '../core';
import { resolveJobLimiters } from '../coordination';
import { readJobDefinition } from '../decorators';
import { JobEventSubscriber } from '../job-events';
import { RecordTrust, resolveRecordSigning } from '../records';
import { readCronDeclarations } from '../scheduler';
import { resolveWarrenConnectionOptions } from './config';
import { planWarrenTopology } from './plan-warren-topology';
import type { WarrenOptions } from './options';

/**
 * What `createEventSubscriber` takes: where the broker is, and the same namespace, topology and job
 * classes the workers are given (subscriptions by name or queue are checked against them), and their
 * `signingKey` when they sign.
 */
export type EventSubscriberOptions = Pick<
  WarrenOptions,
  'url' | 'connection' | 'namespace' | 'topology' | 'jobs' | 'delay' | 'queues' | 'signingKey' | 'logger'
>;

/**
 * A subscriber to live job events for a process that runs no jobs and publishes none (a web server
 * streaming a job's progress to a browser): one connection of its own, named `warren events <pid>`, that
 * reconnects and subscribes again. `close()` ends every subscription and the connection.
 *
 * @example
 * const events = await createEventSubscriber({ url: process.env.AMQP_URL, topology, jobs: [Report] });
 * const subscription = await events.subscribe({ jobId: 'report-42' });
 * for await (const event of subscription) console.log(event.kind);
 * await events.close();
 */
export async function createEventSubscriber(
  options: EventSubscriberOptions = {},
): Promise<JobEventSubscriber> {
  const log = resolveLogger('logger', options.logger);
  const definitions = (options.jobs ?? []).map((job) => readJobDefinition(job));
  const cron = readCronDeclarations({ enabled: false }, options.jobs ?? []);
  const plan = planWarrenTopology(options, definitions, cron, resolveJobLimiters(definitions));
  const trust = new RecordTrust(plan.naming.namespace, resolveRecordSigning(options.signingKey), log);
  const manager = new ConnectionManager(
    resolveWarrenConnectionOptions(options, { connectionName: `warren events ${process.pid}` }),
    log.child({ component: 'connection' }),
  );
  const subscriber = new JobEventSubscriber({
    plan,
    openChannel: () => manager.openConfirmChannel(),
    trust,
    log: log.child({ component: 'job-events' }),
    release: () => manager.close(),
  });
  manager.useReadySteps([{ name: 'job events', run: () => subscriber.reopen() }]);
  await manager.start();
  return subscriber;
}
