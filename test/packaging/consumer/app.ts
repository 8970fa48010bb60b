// What a user writes against the installed package: every entry point, @Job and @Cron on a handler class,
// a typed topology and options, runJob from warren/testing. Compiled as ESM with standard decorators
// (esm/) and as CommonJS with legacy experimentalDecorators (cjs/); prints one JSON line.
import 'reflect-metadata';
import {
  createWarren,
  Cron,
  defineTopology,
  Job,
  readJobDefinition,
  type JobContext,
  type JobData,
  type JobHandler,
  WarrenError,
  type WarrenOptions,
} from 'warren';
import { WarrenModule, WarrenPublisher } from 'warren/nest';
import { type MetricsOptions, type TracingOptions, warrenMetrics, warrenTracing } from 'warren/observability';
import { runJob } from 'warren/testing';

@Cron('0 9 * * *', { tz: 'Asia/Tokyo', data: { report: 'daily' } })
@Job('report.send', { queue: 'reports', attempts: 3 })
export class SendReport implements JobHandler<{ report: string }> {
  readonly sent: string[] = [];
  async handle(data: { report: string }, ctx: JobContext): Promise<string> {
    this.sent.push(`${data.report}#${ctx.attempt}`);
    return data.report.toUpperCase();
  }
}

export const topology = defineTopology({ queues: { reports: { type: 'quorum' } } });
export const options: WarrenOptions = { topology, handlers: [new SendReport()] };

// the payload type reaches the user's code: a wrong one does not compile
// @ts-expect-error report must be a string
const wrong: JobData<typeof SendReport> = { report: 1 };
void wrong;

// warren/observability's types stand without its optional peers: neither prom-client nor
// @opentelemetry/api is installed in this app, and skipLibCheck is off.
export const observability: [MetricsOptions, TracingOptions, typeof warrenMetrics, typeof warrenTracing] = [
  { prefix: 'app_' },
  { traces: 'link' },
  warrenMetrics,
  warrenTracing,
];

export async function main(): Promise<void> {
  const handler = new SendReport();
  const run = await runJob(handler, { report: 'daily' });
  const result: string | undefined = run.result;
  console.log(
    JSON.stringify({
      status: run.status,
      result,
      sent: handler.sent,
      definition: readJobDefinition(SendReport),
      kinds: [typeof createWarren, typeof WarrenModule, typeof WarrenPublisher, typeof WarrenError],
    }),
  );
}
