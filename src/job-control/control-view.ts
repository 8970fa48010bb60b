import { randomUUID } from 'node:crypto';
import type * as amqp from 'amqplib';
import type { RecordReader, RecordTrust } from '../records';
import {
  followStream,
  readStream,
  rejectWhenStalled,
  watchForStaleCheckpoint,
  type CheckpointKeeper,
  type StreamFollower,
  type StreamRecord,
} from '../streams';
import { CONTROL_RETENTION_MS } from './control-stream';
import {
  controlState,
  restoreControlState,
  storedCopyRef,
  type DueJob,
  type StoredCopyRef,
} from './control-checkpoints';
import { dueAfter } from './cancelled-job';
import { parseControlRecord, placeRecord, type ControlRecord } from './control-record';

/** Reading the stream to its end (to this process's own mark) fails when no record came for this long. */
const CATCH_UP_TIMEOUT_MS = 15_000;
const COPY_READ_IDLE_MS = 2000;
/** The in-memory map is swept of records past retention every this many records. */
const SWEEP_EVERY = 1000;

export interface ControlViewDeps {
  readonly stream: string;
  readonly openChannel: () => Promise<amqp.Channel>;
  readonly trust: RecordTrust;
  readonly keeper: CheckpointKeeper;
  /** Declares the stream (once) before the first read. */
  readonly ensureDeclared: () => Promise<void>;
  /** Appends a `mark` record with this id, confirmed. */
  readonly appendMark: (mark: string) => Promise<void>;
}

/**
 * What one process knows of the job-control stream: the latest decision per job id and where each stored
 * copy is. `follow()` reads the stream to its end (from the newest checkpoint it can trust, else the first
 * record) and then follows it live; every record goes through the reader of the current pass (proof,
 * replay guard, shape). Once caught up it offers checkpoints (streams/stream-checkpoints.ts).
 */
export class ControlView {
  readonly decisions = new Map<string, ControlRecord>();
  private readonly copies = new Map<string, StoredCopyRef>();
  private nextOffset = 0;
  private seen = 0;
  private reader: RecordReader;
  private follower: StreamFollower | undefined;
  private caughtUp: Promise<void> | undefined;
  private readonly marks = new Map<string, () => void>();
  private stops = 0;
  /** Ends the read in progress, if any (a stop must not wait out its timeout). */
  private abortRead: (() => void) | undefined;
  private checkpointTried = false;
  /** The sync mark under way, and the one the calls made meanwhile wait for. */
  private syncing: Promise<void> | undefined;
  private nextSync: Promise<void> | undefined;
  /** Whether the current read started from a checkpoint rather than the first record. */
  private fromCheckpoint = false;

  constructor(private readonly deps: ControlViewDeps) {
    this.reader = deps.trust.reader('job-control');
  }

  /** Whether a read is done or under way (and its follower open). */
  get isReading(): boolean {
    return this.caughtUp !== undefined && this.follower?.isClosed !== true;
  }

  /**
   * Reads the stream to its end, then follows it live. The end is this process's own `mark` record: no
   * idle timeout to wait out. Again after the follower's channel closed (a lost connection).
   */
  follow(): Promise<void> {
    if (this.isReading) return this.caughtUp!;
    const attempt = this.catchUp();
    this.caughtUp = attempt;
    attempt.catch(() => {
      if (this.caughtUp === attempt) this.caughtUp = undefined;
    });
    return attempt;
  }

  /**
   * Reads up to a mark appended now, once the view follows: then every record confirmed before the call is
   * in `decisions`. Calls while a mark is under way share the next one (one append per round trip).
   */
  sync(): Promise<void> {
    if (this.nextSync !== undefined) return this.nextSync;
    const next: Promise<void> = (this.syncing ?? Promise.resolve()).then(() => {
      if (this.nextSync === next) this.nextSync = undefined;
      return this.syncOnce();
    });
    this.nextSync = next;
    this.syncing = next.catch(() => undefined);
    return next;
  }

  private async syncOnce(): Promise<void> {
    const mark = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const reached = new Promise<void>((resolve, reject) => {
      this.marks.set(mark, resolve);
      timer = setTimeout(
        () => reject(new Error(`job control: a sync mark did not come back in ${CATCH_UP_TIMEOUT_MS} ms`)),
        CATCH_UP_TIMEOUT_MS,
      );
    });
    reached.catch(() => undefined); // awaited below, once the mark is sent
    try {
      await this.deps.appendMark(mark);
      await reached;
    } finally {
      clearTimeout(timer);
      this.marks.delete(mark);
    }
  }

  async stop(): Promise<void> {
    this.stops++;
    this.abortRead?.();
    await this.follower?.close();
    this.follower = undefined;
    this.caughtUp = undefined;
    await this.deps.keeper.settled();
  }

  /**
   * The `controllable` jobs still waiting for their due time, soonest first: each stored copy's due time
   * (its `warren-delayed`, or its latest reschedule's), without the cancelled and promoted ones and those
   * due by `now`. A job without a stored copy is not known here.
   */
  dueNext(now: number, limit: number, isListed: (queue: string | undefined) => boolean): DueJob[] {
    const due: DueJob[] = [];
    for (const [jobId, ref] of this.copies) {
      if (ref.name === undefined || !isListed(ref.queue)) continue;
      const decision = this.decisions.get(jobId);
      if (decision?.a === 'cancel' || decision?.a === 'promote') continue;
      const at = dueAfter(decision, ref.due);
      if (at > now) due.push({ jobId, name: ref.name, queue: ref.queue, dueAt: at });
    }
    return due.sort((a, b) => a.dueAt - b.dueAt).slice(0, limit);
  }

  /** The stored copy of a job, read again at its offset (its proof checked), if this view knows of one. */
  async storedCopy(jobId: string): Promise<ControlRecord | undefined> {
    const at = this.copies.get(jobId);
    if (at === undefined) return undefined;
    let found: ControlRecord | undefined;
    await readStream(
      this.deps.openChannel,
      this.deps.stream,
      at.offset,
      { max: 1, idleMs: COPY_READ_IDLE_MS, prefetch: 10 },
      (r) => {
        if (r.offset === at.offset && this.reader.verify(r.content, r.properties.headers))
          found = parseControlRecord(r.content);
        return r.offset < at.offset;
      },
    );
    return found?.a === 'stored' && found.j === jobId ? found : undefined;
  }

  private async catchUp(): Promise<void> {
    const stops = this.stops;
    await this.follower?.close();
    await this.deps.ensureDeclared();
    if (!this.checkpointTried) {
      this.checkpointTried = true;
      const checkpoint = await this.deps.keeper.newest();
      if (checkpoint !== undefined)
        this.restore(checkpoint.upTo, restoreControlState(checkpoint, this.fresh()));
    }
    const mark = randomUUID();
    let abort: (() => void) | undefined;
    let stopWatching = () => {};
    const reached = new Promise<void>((resolve, reject) => {
      this.marks.set(mark, resolve);
      abort = () => reject(new Error('job control stopped'));
      this.abortRead = abort;
    });
    // a long read is fine, a stuck one is not: no record for CATCH_UP_TIMEOUT_MS fails it
    const late = rejectWhenStalled(
      () => this.nextOffset,
      CATCH_UP_TIMEOUT_MS,
      () => new Error('job control: no record of the stream came for 15 s'),
    );
    // awaited only once the follower is open and the mark sent, which may take longer than the timeout
    reached.catch(() => undefined);
    try {
      const follower = await this.openFollower();
      // stopped while opening (a read ahead still running at close): no consumer may outlive the stop
      if (stops !== this.stops) {
        await follower.close();
        throw new Error('job control stopped');
      }
      this.follower = follower;
      await this.deps.appendMark(mark);
      if (this.fromCheckpoint)
        stopWatching = watchForStaleCheckpoint(follower, () => this.readAgainIfStale(follower));
      await Promise.race([reached, late.stalled]);
      this.offerCheckpoint(true);
    } finally {
      late.cancel();
      stopWatching();
      this.marks.delete(mark);
      if (this.abortRead === abort) this.abortRead = undefined;
    }
  }

  private openFollower(): Promise<StreamFollower> {
    return followStream(this.deps.openChannel, this.deps.stream, this.nextOffset, (r) => this.visit(r));
  }

  /** A new reader for a pass; `restore` gives it the checkpoint's replay memory. */
  private fresh(): RecordReader {
    return this.deps.trust.reader('job-control');
  }

  /** Takes a checkpoint's state (checked by restoreControlState; undefined: not taken). */
  private restore(upTo: number, state: ReturnType<typeof restoreControlState>): void {
    if (state === undefined) return;
    for (const record of state.decisions) this.decisions.set(record.j, record);
    for (const [jobId, ref] of state.copies) this.copies.set(jobId, ref);
    this.reader = state.reader;
    this.nextOffset = upTo;
    this.fromCheckpoint = true;
  }

  /**
   * Nothing delivered while this process's own mark is on the stream: the stream ends before the
   * checkpoint's offset (deleted and declared again since), so it reads again from the first record,
   * where it meets the same mark, which ends the catch-up.
   */
  private readAgainIfStale(follower: StreamFollower): void {
    if (!this.fromCheckpoint || this.follower !== follower) return;
    this.decisions.clear();
    this.copies.clear();
    this.reader = this.fresh();
    this.nextOffset = 0;
    this.fromCheckpoint = false;
    const stale = this.follower;
    this.follower = undefined;
    void stale
      ?.close()
      .then(() => this.openFollower())
      .then((follower) => {
        this.follower = follower;
      })
      .catch(() => undefined);
  }

  private visit(record: StreamRecord): void {
    if (record.offset < this.nextOffset) return;
    this.nextOffset = record.offset + 1;
    const where = { offset: record.offset, stream: this.deps.stream };
    if (!this.reader.accept(record.content, record.properties.headers, where)) return;
    const parsed = parseControlRecord(record.content);
    if (parsed === undefined) {
      this.reader.skip('malformed', where);
      return;
    }
    if (parsed.a === 'mark') this.marks.get(parsed.c ?? '')?.();
    else if (parsed.a === 'stored') this.copies.set(parsed.j, storedCopyRef(parsed, record.offset));
    else this.decisions.set(parsed.j, placeRecord(parsed, this.decisions.get(parsed.j)));
    if (++this.seen % SWEEP_EVERY === 0) this.sweep(Date.now() - CONTROL_RETENTION_MS);
    this.offerCheckpoint();
  }

  /** A checkpoint at `nextOffset` is the state of every record before it, caught up or not. */
  private offerCheckpoint(isCaughtUp = false): void {
    this.deps.keeper.offer(isCaughtUp, this.nextOffset, () => ({
      upTo: this.nextOffset,
      guard: this.reader.guardSnapshot(),
      state: controlState(this.decisions, this.copies),
    }));
  }

  private sweep(before: number): void {
    for (const [jobId, r] of this.decisions) if (r.t < before) this.decisions.delete(jobId);
    for (const [jobId, r] of this.copies) if (r.t < before) this.copies.delete(jobId);
  }
}
