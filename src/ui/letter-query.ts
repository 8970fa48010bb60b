import type { LetterFilter, LetterState } from '../ops';
import { Refusal } from './request-guard';

const STATES: readonly LetterState[] = ['dead', 'replayed', 'purged'];

/** Plain JSON (a request body, or query parameters) to a dead-letter filter; refuses what it cannot read. */
export function letterFilter(input: Record<string, unknown>): LetterFilter {
  const text = (key: string): string | undefined => {
    const value = input[key];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') throw new Refusal(400, `${key} must be text`);
    return value;
  };
  const date = (key: string): Date | undefined => {
    const value = text(key);
    if (value === undefined) return undefined;
    const parsed = new Date(value);
    if (Number.isNaN(parsed.getTime())) throw new Refusal(400, `${key} must be a date (got ${value})`);
    return parsed;
  };
  const state = text('state');
  if (state !== undefined && !STATES.includes(state as LetterState))
    throw new Refusal(400, `state must be one of ${STATES.join(', ')} (got ${state})`);
  const offsets = input.offsets;
  if (offsets !== undefined && !(Array.isArray(offsets) && offsets.every((o) => Number.isInteger(o))))
    throw new Refusal(400, 'offsets must be a list of whole numbers');
  const field = text('field');
  const [path, ...rest] = field?.split('=') ?? [];
  if (field !== undefined && (!path || rest.length === 0))
    throw new Refusal(400, `field must be path=value (got ${field})`);
  const filter: Record<string, unknown> = {
    offsets,
    jobId: text('jobId'),
    name: text('name'),
    queue: text('queue'),
    reason: text('reason'),
    errorClass: text('errorClass'),
    error: text('error'),
    since: date('since'),
    until: date('until'),
    state,
    field: field === undefined ? undefined : { path, equals: rest.join('=') },
  };
  for (const key of Object.keys(filter)) if (filter[key] === undefined) delete filter[key];
  return filter as LetterFilter;
}
