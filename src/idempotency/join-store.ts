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
 * Each of those outcomes is a duty (publish the next step, undo a branch, go on compensating), and
 * exactly one branch's reports are given it, however the reports race: the first branch that claims
 * it. A redelivered report of that branch is given it again (its first try may have died before
 * publishing); the other branches' reports are told `open`, or are left out of `done`.
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

/**
 * What a join store keeps, below the contract: each branch's first report, the fault flag, and who
 * holds each duty. {@link reportArrival}, {@link reportFailure} and {@link reportUndone} decide on it.
 */
export interface JoinRecords {
  /** Keeps the branch's state and result unless it has one already (the first report wins). */
  record(joinId: string, branch: number, state: 'done' | 'failed', result: unknown): Promise<void>;
  markFaulted(joinId: string): Promise<void>;
  /** A completed branch was compensated (`done` becomes `undone`; other states stay). */
  markUndone(joinId: string, branch: number): Promise<void>;
  read(joinId: string): Promise<JoinRows>;
  /**
   * Gives `duty` to `claimant` unless another claimant holds it, in one atomic step: whether
   * `claimant` holds it now (also when it already did).
   */
  claim(joinId: string, duty: string, claimant: number): Promise<boolean>;
}

const OPEN: JoinArrival = { status: 'open' };

/** A join store over its {@link JoinRecords}: what each report decides, and which duty it is given. */
export abstract class RecordedJoinStore implements JoinStore {
  protected abstract readonly records: JoinRecords;

  arrive(joinId: string, branches: number, branch: number, result: unknown): Promise<JoinArrival> {
    return reportArrival(this.records, joinId, branches, branch, result);
  }

  fail(joinId: string, branches: number, branch: number): Promise<JoinFailure> {
    return reportFailure(this.records, joinId, branches, branch);
  }

  undone(joinId: string, branches: number, branch: number): Promise<{ readonly settled: boolean }> {
    return reportUndone(this.records, joinId, branches, branch);
  }
}

async function reportArrival(
  records: JoinRecords,
  joinId: string,
  branches: number,
  branch: number,
  result: unknown,
): Promise<JoinArrival> {
  await records.record(joinId, branch, 'done', result);
  const arrival = arrivalOf(await records.read(joinId), branches);
  if (arrival.status === 'open') return arrival;
  const duty = arrival.status === 'complete' ? 'complete' : undoDuty(branch);
  return (await records.claim(joinId, duty, branch)) ? arrival : OPEN;
}

async function reportFailure(
  records: JoinRecords,
  joinId: string,
  branches: number,
  branch: number,
): Promise<JoinFailure> {
  await records.markFaulted(joinId);
  await records.record(joinId, branch, 'failed', null);
  const rows = await records.read(joinId);
  const done: { branch: number; result: unknown }[] = [];
  for (const [other, row] of rows.branches) {
    if (row.state === 'done' && (await records.claim(joinId, undoDuty(other), branch)))
      done.push({ branch: other, result: row.result });
  }
  return { done, settled: await settles(records, joinId, rows, branches, branch) };
}

async function reportUndone(
  records: JoinRecords,
  joinId: string,
  branches: number,
  branch: number,
): Promise<{ readonly settled: boolean }> {
  await records.markUndone(joinId, branch);
  return { settled: await settles(records, joinId, await records.read(joinId), branches, branch) };
}

async function settles(
  records: JoinRecords,
  joinId: string,
  rows: JoinRows,
  branches: number,
  branch: number,
): Promise<boolean> {
  return isSettled(rows, branches) && records.claim(joinId, 'settled', branch);
}

function undoDuty(branch: number): string {
  return `undo.${branch}`;
}

/** The answer to `arrive`, from the join's rows after the report. */
function arrivalOf(rows: JoinRows, branches: number): JoinArrival {
  if (rows.faulted) return { status: 'faulted' };
  const results: unknown[] = [];
  for (let branch = 0; branch < branches; branch++) {
    const row = rows.branches.get(branch);
    if (row?.state !== 'done') return OPEN;
    results.push(row.result);
  }
  return { status: 'complete', results };
}

/** Faulted, and every branch either failed or was undone. */
function isSettled(rows: JoinRows, branches: number): boolean {
  if (!rows.faulted) return false;
  for (let branch = 0; branch < branches; branch++) {
    const state = rows.branches.get(branch)?.state;
    if (state !== 'failed' && state !== 'undone') return false;
  }
  return true;
}
