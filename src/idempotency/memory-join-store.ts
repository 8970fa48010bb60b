import { RecordedJoinStore, type JoinBranchState, type JoinRecords, type JoinRows } from './join-store';

interface MemoryJoin {
  faulted: boolean;
  branches: Map<number, { state: JoinBranchState; result: unknown }>;
  /** Each duty's holder (see {@link JoinRecords.claim}). */
  duties: Map<string, number>;
}

/**
 * Fan-in counters in this process's memory: right for one worker process (and tests). Several
 * processes running branches of the same slips need {@link PostgresJoinStore}. Keeps the latest
 * `maxJoins` joins (default 100 000); the oldest are forgotten first.
 */
export class MemoryJoinStore extends RecordedJoinStore {
  private readonly joins = new Map<string, MemoryJoin>();
  protected readonly records: JoinRecords = {
    record: async (joinId, branch, state, result) => {
      const join = this.join(joinId);
      if (!join.branches.has(branch)) join.branches.set(branch, { state, result });
    },
    markFaulted: async (joinId) => {
      this.join(joinId).faulted = true;
    },
    markUndone: async (joinId, branch) => {
      const row = this.join(joinId).branches.get(branch);
      if (row?.state === 'done') row.state = 'undone';
    },
    read: async (joinId): Promise<JoinRows> => this.join(joinId),
    claim: async (joinId, duty, claimant) => {
      const duties = this.join(joinId).duties;
      if (!duties.has(duty)) duties.set(duty, claimant);
      return duties.get(duty) === claimant;
    },
  };

  constructor(private readonly maxJoins = 100_000) {
    super();
  }

  private join(joinId: string): MemoryJoin {
    let join = this.joins.get(joinId);
    if (!join) {
      join = { faulted: false, branches: new Map(), duties: new Map() };
      this.joins.set(joinId, join);
      for (const oldest of this.joins.keys()) {
        if (this.joins.size <= this.maxJoins) break;
        this.joins.delete(oldest);
      }
    }
    return join;
  }
}
