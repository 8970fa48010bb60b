import type { ConfirmPublisher, ConnectionManager } from '../connection';
import { CronLedger, LeaderElection } from '../coordination';
import type { Logger } from '../core';
import type { LeadershipSignal } from './scheduler';
import type { TickLedger } from './term-ledger';

export interface CronLeadershipDeps {
  readonly manager: ConnectionManager;
  readonly confirms: ConfirmPublisher;
  /** The single-active-consumer token queue (`plan.naming.leaderQueue()`). */
  readonly leaderQueue: string;
  /** The max-length-1 queue holding the last fired ticks (`plan.naming.cronLedgerQueue()`). */
  readonly ledgerQueue: string;
  /** How long a ledger write may wait for the broker's confirm, ms. */
  readonly publishTimeoutMs: number;
  readonly reapplyTopology: () => Promise<void>;
  readonly log: Logger;
}

/**
 * Who fires the cron ticks of an application, and what the last leader fired: the broker-backed leader
 * election and cron ledger (see coordination/), seen by the scheduler as a leadership signal and a tick
 * ledger. Only a process whose scheduler is enabled takes part.
 */
export class CronLeadership implements LeadershipSignal {
  readonly ledger: TickLedger;
  private readonly election: LeaderElection;

  constructor(deps: CronLeadershipDeps) {
    this.election = new LeaderElection(deps.manager, deps.leaderQueue, deps.reapplyTopology, deps.log);
    this.ledger = new CronLedger(deps.manager, deps.confirms, deps.ledgerQueue, deps.publishTimeoutMs);
  }

  get isLeader(): boolean {
    return this.election.isLeader;
  }

  onChange(listener: (isLeader: boolean) => void): () => void {
    return this.election.onChange(listener);
  }

  /** The connection's ready hook. */
  open(generation: number): Promise<void> {
    return this.election.open(generation);
  }

  /** Takes part in the election from now on. */
  start(): Promise<void> {
    return this.election.start();
  }

  /** Leadership ends now; the token goes to the next process. */
  stop(): Promise<void> {
    return this.election.stop();
  }
}
