import {
  redactCredentials,
  type ProcessStatus,
  type QueueOverview,
  type ScheduleOverview,
  type WarrenOps,
} from '../ops';
import { RateMeter } from './processing-rate';

/** A queue on the overview: the broker's counts, and how fast the processes work through it. */
export interface DashboardQueue extends QueueOverview {
  /**
   * Deliveries handled per second (completed, retried or dead) by every answering process together,
   * since the previous snapshot; absent on the first snapshot and when no process runs the queue.
   */
  readonly rate?: number;
}

/** What every browser sees on the overview: one per dashboard, refreshed at most once per `refreshMs`. */
export interface DashboardSnapshot {
  readonly at: string;
  readonly queues: readonly DashboardQueue[];
  readonly processes: readonly ProcessStatus[];
  /** Listening processes that did not answer (management API only). */
  readonly silent: number | undefined;
  readonly schedules: readonly ScheduleOverview[];
  /** Why a part could not be read, if one could not (the rest is still shown). */
  readonly errors: readonly string[];
}

type Listener = (snapshot: DashboardSnapshot, json: string) => void;

/**
 * The one snapshot a dashboard serves to every request and event stream: the broker sees the load of
 * one browser however many are open. Refreshes on demand when older than `refreshMs`, and on a timer
 * only while an event stream listens; concurrent callers share one refresh.
 */
export class SnapshotCache {
  private current: { at: number; snapshot: DashboardSnapshot; json: string } | undefined;
  private pending: Promise<DashboardSnapshot> | undefined;
  private readonly listeners = new Set<Listener>();
  private timer: NodeJS.Timeout | undefined;
  private readonly rates = new RateMeter();
  /** How many times the broker was asked (tests and the load script read it). */
  refreshes = 0;

  constructor(
    private readonly ops: WarrenOps,
    private readonly refreshMs: number,
  ) {}

  /**
   * The snapshot. Only the first read waits for the broker; later ones get the last snapshot at once and,
   * when it is older than `refreshMs`, start one refresh in the background (stale while revalidating: a
   * refresh takes as long as processes take to answer, `replyTimeoutMs` without the management API).
   */
  get(): Promise<DashboardSnapshot> {
    if (!this.current) return this.refresh();
    if (Date.now() - this.current.at >= this.refreshMs) void this.refresh().catch(() => undefined);
    return Promise.resolve(this.current.snapshot);
  }

  /** A snapshot read after now: what an event stream pushes, and what follows an action. */
  fresh(): Promise<DashboardSnapshot> {
    return this.refresh();
  }

  /** The snapshot as JSON, serialized once per refresh however many browsers ask. */
  async json(): Promise<string> {
    await this.get();
    return this.current!.json;
  }

  /** Calls the listener with every new snapshot until the returned function is called. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.tick();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer) clearTimeout(this.timer);
    };
  }

  /** Marks the snapshot stale (an action changed something): the next read starts a refresh. */
  invalidate(): void {
    if (this.current) this.current = { ...this.current, at: 0 };
  }

  close(): void {
    this.listeners.clear();
    if (this.timer) clearTimeout(this.timer);
  }

  private tick(): void {
    void this.get()
      .then(
        (snapshot) => {
          for (const listener of this.listeners) listener(snapshot, this.current!.json);
        },
        () => undefined,
      )
      .finally(() => {
        if (this.listeners.size === 0) return;
        this.timer = setTimeout(() => this.tick(), this.refreshMs);
        this.timer.unref();
      });
  }

  private refresh(): Promise<DashboardSnapshot> {
    this.pending ??= this.read().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async read(): Promise<DashboardSnapshot> {
    this.refreshes += 1;
    const errors: string[] = [];
    const failed =
      <T>(what: string, fallback: T) =>
      (error: unknown) => {
        // Every viewer sees these: a secret in a message (a management URL's password) never reaches them.
        errors.push(redactCredentials(`${what}: ${error instanceof Error ? error.message : String(error)}`));
        return fallback;
      };
    const [queues, report, schedules] = await Promise.all([
      this.ops.queues().catch(failed('queues', [] as QueueOverview[])),
      this.ops.processes().catch(failed('processes', { processes: [], silent: undefined })),
      this.ops.schedules().catch(failed('schedules', [] as ScheduleOverview[])),
    ]);
    const now = Date.now();
    const rates = this.rates.update(report.processes, now);
    const snapshot: DashboardSnapshot = {
      at: new Date(now).toISOString(),
      queues: queues.map((q) => {
        const rate = rates.get(q.key);
        return rate === undefined ? q : { ...q, rate: Math.round(rate * 100) / 100 };
      }),
      processes: report.processes,
      silent: report.silent,
      schedules,
      errors,
    };
    this.current = { at: now, snapshot, json: JSON.stringify(snapshot) };
    return snapshot;
  }
}
