import { formatIssuePath, type StandardSchemaResult, type StandardSchemaV1 } from './standard-schema';

/** One reason a payload failed its job's schema, its path flattened to `a.b.0`. */
export interface PayloadIssue {
  readonly message: string;
  readonly path?: string;
}

/** The outcome of checking a payload against its job's schema: the schema's output, or its issues. */
export type PayloadCheck =
  | { readonly value: unknown; readonly issues?: undefined }
  | { readonly issues: readonly PayloadIssue[] };

/**
 * The one payload check of warren (publisher, worker, scheduler, `runJob`): runs the job's Standard Schema on
 * `data`. A schema that throws (on a payload nested too deep for its recursion, say) fails validation with
 * one issue rather than escaping, so a worker dead-letters the job instead of losing the delivery. Not an
 * async function: on the hot path a valid payload costs one promise and the schema's own result object.
 */
export function validatePayload(schema: StandardSchemaV1, data: unknown): Promise<PayloadCheck> {
  let result: StandardSchemaResult<unknown> | Promise<StandardSchemaResult<unknown>>;
  try {
    result = schema['~standard'].validate(data);
  } catch (error) {
    return Promise.resolve(threw(error));
  }
  if (typeof (result as { then?: unknown }).then === 'function')
    return Promise.resolve(result).then(toCheck, threw);
  return Promise.resolve(toCheck(result as StandardSchemaResult<unknown>));
}

function toCheck(result: StandardSchemaResult<unknown>): PayloadCheck {
  if (!result.issues) return result;
  return {
    issues: result.issues.map((issue): PayloadIssue => {
      const path = formatIssuePath(issue);
      return path ? { message: issue.message, path } : { message: issue.message };
    }),
  };
}

function threw(error: unknown): PayloadCheck {
  return { issues: [{ message: `the schema threw: ${(error as Error)?.message ?? String(error)}` }] };
}

/** `a.b: must be a string; c: required`, the summary every payload error message shows. */
export function summarizeIssues(issues: readonly PayloadIssue[]): string {
  return issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ');
}
