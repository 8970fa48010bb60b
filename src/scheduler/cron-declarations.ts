import { ConfigurationError } from '../core';
import { describeJobSource, jobIdentity, readCronMetadata, readJobDefinition } from '../decorators';
import type { TopologyPlan } from '../topology';
import { resolveSchedulerOptions, type ResolvedSchedulerOptions, type SchedulerOptions } from './options';
import { resolveSchedule, type ScheduleSpec } from './schedule';
import { checkScheduleData } from './schedule-data';

/** What createWarren learns from the job classes about cron, before planning the topology. */
export interface CronDeclarations {
  readonly scheduler: ResolvedSchedulerOptions;
  readonly crons: readonly ScheduleSpec[];
}

/**
 * Reads `@Cron` from every job class of this process (handler instances and publish-only classes; a class
 * given twice counts once) and the `cron` option of every defined job, and resolves the scheduler options.
 * Throws ConfigurationError naming the path.
 */
export function readCronDeclarations(
  input: SchedulerOptions | undefined,
  sources: readonly object[],
): CronDeclarations {
  const classes = new Map<unknown, object>();
  for (const source of sources) classes.set(jobIdentity(source), source);
  const hasCron = [...classes.values()].some((source) => readCronMetadata(source).length > 0);
  const scheduler = resolveSchedulerOptions(input, hasCron);

  const crons = new Map<string, { spec: ScheduleSpec; at: string }>();
  for (const source of classes.values()) {
    const metadata = readCronMetadata(source);
    if (metadata.length === 0) continue;
    const definition = readJobDefinition(source);
    const label = describeJobSource(source);
    for (const cron of metadata) {
      const at = `${label} ${label.startsWith('defineJob') ? 'cron' : '@Cron'}('${cron.pattern}')`;
      const spec = resolveSchedule(
        at,
        {
          job: definition.name,
          pattern: cron.pattern,
          data: cron.options.data,
          id: cron.options.id,
          tz: cron.options.tz,
          missedTicks: cron.options.missedTicks,
          source: 'decorator',
        },
        scheduler,
      );
      const earlier = crons.get(spec.id);
      if (earlier)
        throw new ConfigurationError(
          `${at} and ${earlier.at} share the schedule id '${spec.id}': give one of them its own { id }`,
        );
      crons.set(spec.id, { spec, at });
    }
  }
  return { scheduler, crons: [...crons.values()].map((c) => c.spec) };
}

/** Checks every `@Cron` payload against its job's schema (createWarren, before connecting). */
export async function checkCronData(plan: TopologyPlan, declarations: CronDeclarations): Promise<void> {
  for (const spec of declarations.crons)
    await checkScheduleData(`@Cron('${spec.id}')`, plan.jobs.get(spec.job)?.schema, spec.data);
}
