/**
 * The Standard Schema interface (standardschema.dev), spelled out here so that zod, valibot, arktype
 * and any other compliant library validate job payloads without warren depending on any of them.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (
      value: unknown,
    ) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardSchemaIssue> };

export interface StandardSchemaIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** Flattens an issue path to `a.b.0` for error messages and dead-letter headers. */
export function formatIssuePath(issue: StandardSchemaIssue): string | undefined {
  if (!issue.path || issue.path.length === 0) return undefined;
  return issue.path.map((p) => String(typeof p === 'object' && p !== null ? p.key : p)).join('.');
}
