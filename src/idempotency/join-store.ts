/**
 * The contract of a fan-in counter (a routing slip's parallel step): which branches of a join
 * completed, failed or were undone, kept where every worker process sees it. Every operation is
 * idempotent per `(joinId, branch)`: a redelivered branch that reports again cannot count twice.
 *
 * - `arrive`: the branch completed (its first report wins; later ones change nothing). `complete`
 *   (with every branch's result, in branch order) once all branches arrived; `faulted` when another
 *   branch failed for good first (the caller undoes its own branch); `open` otherwise.
 * - `fail`: the branch failed for good: the join is faulted. Returns the branches that completed (to
 *   undo) and whether the join is settled.
 * - `undone`: a completed branch of a faulted join was compensated. Returns whether the join is
 *   settled: faulted, and every branch failed or undone (the slip's compensation goes on then).
 *
 * Concurrent reports may both see `complete` (or `settled`): callers publish the next message with a
 * fixed id, so the worst case is a duplicate message, never a lost one.
 */
export interface JoinStore {
  arrive(joinId: string, branches: number, branch: number, result: unknown): Promise<JoinArrival>;
  fail(joinId: string, branches: number, branch: number): Promise<JoinFailure>;
  undone(joinId: string, branches: number, branch: number): Promise<{ readonly settled: boolean }>;
  /** Optional: made ready for use (create the table); `createWarren` awaits it. */
  prepare?(): Promise<void>;
}

export type JoinArrival =
  | { readonly status: 'open' }
  | { readonly status: 'faulted' }
  | { readonly status: 'complete'; readonly results: readonly unknown[] };

export interface JoinFailure {
  /** Branches that completed, with their results: each must be undone. */
  readonly done: readonly { readonly branch: number; readonly result: unknown }[];
  readonly settled: boolean;
}

/** What a join holds: the fault flag and each reported branch's state and result. */
export interface JoinRows {
  readonly faulted: boolean;
  readonly branches: ReadonlyMap<number, { readonly state: JoinBranchState; readonly result: unknown }>;
}

export type JoinBranchState = 'done' | 'failed' | 'undone';

/** The answer to `arrive`, from the join's rows after the report. */
export function arrivalOf(rows: JoinRows, branches: number): JoinArrival {
  if (rows.faulted) return { status: 'faulted' };
  const results: unknown[] = [];
  for (let branch = 0; branch < branches; branch++) {
    const row = rows.branches.get(branch);
    if (row?.state !== 'done') return { status: 'open' };
    results.push(row.result);
  }
  return { status: 'complete', results };
}

/** Faulted, and every branch either failed or was undone. */
export function isSettled(rows: JoinRows, branches: number): boolean {
  if (!rows.faulted) return false;
  for (let branch = 0; branch < branches; branch++) {
    const state = rows.branches.get(branch)?.state;
    if (state !== 'failed' && state !== 'undone') return false;
  }
  return true;
}

/** The answer to `fail`, from the join's rows after the report. */
export function failureOf(rows: JoinRows, branches: number): JoinFailure {
  const done = [...rows.branches]
    .filter(([, row]) => row.state === 'done')
    .map(([branch, row]) => ({ branch, result: row.result }));
  return { done, settled: isSettled(rows, branches) };
}
