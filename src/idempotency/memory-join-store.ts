import {
  arrivalOf,
  failureOf,
  isSettled,
  type JoinArrival,
  type JoinBranchState,
  type JoinFailure,
  type JoinStore,
} from './join-store';

interface MemoryJoin {
  faulted: boolean;
  branches: Map<number, { state: JoinBranchState; result: unknown }>;
}

/**
 * Fan-in counters in this process's memory: right for one worker process (and tests). Several
 * processes running branches of the same slips need {@link PostgresJoinStore}. Keeps the latest
 * `maxJoins` joins (default 100 000); the oldest are forgotten first.
 */
export class MemoryJoinStore implements JoinStore {
  private readonly joins = new Map<string, MemoryJoin>();

  constructor(private readonly maxJoins = 100_000) {}

  async arrive(joinId: string, branches: number, branch: number, result: unknown): Promise<JoinArrival> {
    const join = this.join(joinId);
    if (!join.branches.has(branch)) join.branches.set(branch, { state: 'done', result });
    return arrivalOf(join, branches);
  }

  async fail(joinId: string, branches: number, branch: number): Promise<JoinFailure> {
    const join = this.join(joinId);
    join.faulted = true;
    if (!join.branches.has(branch)) join.branches.set(branch, { state: 'failed', result: null });
    return failureOf(join, branches);
  }

  async undone(joinId: string, branches: number, branch: number): Promise<{ readonly settled: boolean }> {
    const join = this.join(joinId);
    const row = join.branches.get(branch);
    if (row?.state === 'done') row.state = 'undone';
    return { settled: isSettled(join, branches) };
  }

  private join(joinId: string): MemoryJoin {
    let join = this.joins.get(joinId);
    if (!join) {
      join = { faulted: false, branches: new Map() };
      this.joins.set(joinId, join);
      for (const oldest of this.joins.keys()) {
        if (this.joins.size <= this.maxJoins) break;
        this.joins.delete(oldest);
      }
    }
    return join;
  }
}
