/**
 * Steady publishing for fault scenarios: `lanes` loops, each publishing one job at a time with a
 * short pause between publishes, every job under its own id and tracked by a {@link FaultLedger}.
 * A failed publish does not stop its lane: the next job is tried, as a service would.
 */
import { ShutdownError } from '../../src';
import { passTime } from '../support/wait-for';
import type { FaultLedger } from './fault-ledger';

export interface PublishLoadOptions {
  /** Concurrent publishing loops. */
  readonly lanes: number;
  /** Pause between two publishes of one lane: paces the load, it does not wait for anything. */
  readonly pauseMs: number;
  /** Job id prefix; ids are `<prefix>-<lane>-<n>`. */
  readonly prefix: string;
  /** Stop after this many publishes in total. */
  readonly max?: number;
}

export class PublishLoad {
  private running = false;
  private loops: Promise<void>[] = [];
  private count = 0;

  constructor(
    private readonly ledger: FaultLedger,
    private readonly publish: (id: string) => Promise<unknown>,
    private readonly options: PublishLoadOptions,
  ) {}

  /** Publishes attempted so far. */
  get attempted(): number {
    return this.count;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (let lane = 0; lane < this.options.lanes; lane++) this.loops.push(this.lane(lane));
  }

  /** Stops every lane and resolves once each lane's last publish settled (confirmed or failed). */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops.splice(0));
  }

  /** Resolves when the lanes stopped on their own (`max` reached). */
  async finished(): Promise<void> {
    await Promise.all(this.loops);
  }

  private async lane(lane: number): Promise<void> {
    let n = 0;
    while (this.running && (this.options.max === undefined || this.count < this.options.max)) {
      this.count += 1;
      const id = `${this.options.prefix}-${lane}-${n++}`;
      const publishing = this.publish(id);
      await this.ledger.track(id, publishing);
      // The instance was closed (a failed test's cleanup): nothing more to publish.
      if (
        await publishing.then(
          () => false,
          (error: unknown) => error instanceof ShutdownError,
        )
      )
        return;
      // Pacing: a steady load, not a flood.
      if (this.options.pauseMs > 0) await passTime(this.options.pauseMs);
    }
  }
}
