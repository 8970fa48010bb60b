import type { LoggedLetter } from './log-record';

/** A letter's state: the last marker naming it, or `dead` while none does. */
export type LetterState = 'dead' | 'replayed' | 'purged';

/** What `search`, `replay` and `purge` select. Every given field must match (AND). */
export interface LetterFilter {
  /** Exactly these log offsets. */
  readonly offsets?: readonly number[];
  readonly jobId?: string;
  /** Job name, exact. */
  readonly name?: string;
  /** Job queue key, exact. */
  readonly queue?: string;
  /** Dead reason, exact (`attempts-exhausted`, `unrecoverable`, `expired`, ...). */
  readonly reason?: string;
  /** Error class as the error's first line names it, exact (`TypeError`). */
  readonly errorClass?: string;
  /** Text the error's first line contains, case-insensitive. */
  readonly error?: string;
  /** Died at or after this time. */
  readonly since?: Date;
  /** Died before this time. */
  readonly until?: Date;
  /** A payload field by dotted path (`customer.id`) equal to a value (compared as strings). */
  readonly field?: { readonly path: string; readonly equals: string | number | boolean };
  /** Default: every state. */
  readonly state?: LetterState;
}

/** A predicate for a filter, its parts prepared once (a search runs it over every indexed letter). */
export function compileFilter(filter: LetterFilter): (letter: LoggedLetter, state: LetterState) => boolean {
  const offsets = filter.offsets ? new Set(filter.offsets) : undefined;
  const error = filter.error?.toLowerCase();
  const since = filter.since?.getTime();
  const until = filter.until?.getTime();
  const path = filter.field?.path.split('.');
  const equals = filter.field === undefined ? undefined : String(filter.field.equals);
  return (letter, state) =>
    (offsets === undefined || offsets.has(letter.offset)) &&
    (filter.state === undefined || filter.state === state) &&
    (filter.jobId === undefined || letter.jobId === filter.jobId) &&
    (filter.name === undefined || letter.name === filter.name) &&
    (filter.queue === undefined || letter.queue === filter.queue) &&
    (filter.reason === undefined || letter.reason === filter.reason) &&
    (filter.errorClass === undefined || letter.errorClass === filter.errorClass) &&
    (error === undefined || (letter.error?.toLowerCase().includes(error) ?? false)) &&
    (since === undefined || letter.deadAt >= since) &&
    (until === undefined || letter.deadAt < until) &&
    (path === undefined || fieldAt(letter.data, path) === equals);
}

function fieldAt(data: unknown, path: readonly string[]): string | undefined {
  let value: unknown = data;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value === undefined || value === null || typeof value === 'object' ? undefined : String(value);
}
