import {
  ConfigurationError,
  summarizeIssues,
  UnknownJobError,
  validatePayload,
  type StandardSchemaV1,
} from '../core';
import type { TopologyPlan } from '../topology';
import type { ResolvedSchedulerOptions } from './options';
import { resolveSchedule, type ScheduleOptions, type ScheduleSource, type ScheduleSpec } from './schedule';

/**
 * A schedule made at run time (`schedule`, `addSchedule`): its job must be one of the plan's, its pattern,
 * time zone and missed-tick policy valid, and its data must pass the job's schema.
 */
export async function resolveRuntimeSchedule(
  at: string,
  plan: TopologyPlan,
  defaults: ResolvedSchedulerOptions,
  input: { job: string; pattern: string; data: unknown; options: ScheduleOptions; source: ScheduleSource },
): Promise<ScheduleSpec> {
  const { job, pattern, data, options, source } = input;
  const planned = plan.jobs.get(job);
  if (planned === undefined) throw new UnknownJobError(job, { known: [...plan.jobs.keys()] });
  const spec = resolveSchedule(
    at,
    { job, pattern, data, id: options.id, tz: options.tz, missedTicks: options.missedTicks, source },
    defaults,
  );
  await checkScheduleData(at, planned.schema, spec.data);
  return spec;
}

/**
 * A schedule's fixed payload must pass the job's schema: checked when the schedule is declared, not at its
 * first tick.
 */
export async function checkScheduleData(
  at: string,
  schema: StandardSchemaV1 | undefined,
  data: unknown,
): Promise<void> {
  if (!schema) return;
  const result = await validatePayload(schema, data);
  if (result.issues)
    throw new ConfigurationError(
      `${at}.data does not match the job's schema: ${summarizeIssues(result.issues)}`,
    );
}
