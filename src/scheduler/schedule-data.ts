import { ConfigurationError, formatIssuePath, type StandardSchemaV1 } from '../core';

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
  const result = await schema['~standard'].validate(data);
  if (result.issues) {
    const summary = result.issues
      .map((issue) =>
        formatIssuePath(issue) ? `${formatIssuePath(issue)}: ${issue.message}` : issue.message,
      )
      .join('; ');
    throw new ConfigurationError(`${at}.data does not match the job's schema: ${summary}`);
  }
}
