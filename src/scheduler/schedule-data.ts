import { ConfigurationError, summarizeIssues, validatePayload, type StandardSchemaV1 } from '../core';

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
