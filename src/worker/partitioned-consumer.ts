// size-exception: one partitioned queue's state machine (membership, assignment, handover, the fence, and the two start gates, per-key order or per-key limits, share its waiting list, its running count and its lease checks)
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { PartitionLostError, type KeyLimitStats } from '../core';
import { assignPartitions, membershipTiming, PartitionMembership } from '../coordination';
import { DEFAULT_KEY, deliveredKey, HEADERS } from '../message';
import type { PlannedJobQueue } from '../topology';
import type { Delivery } from './delivery';
import { handlersEnded } from './handlers-ended';
import type { ConsumerSettings, PartitionedOptions, QueueConsumerDeps } from './consumer-settings';
import type { KeyLimitOverride, KeyLimitVerdict } from './key-limits';
import { QueueConsumer } from './queue-consumer';
import { RateParking, type ParkedDecision } from './rate-parking';

/** One partition this process owns: its consumer and where it stands. */
interface Owned {
  readonly index: number;
  readonly consumer: QueueConsumer;
  /** 'releasing': handing over (no new starts); 'fenced': lost, nothing of it is started or settled. */
  state: 'active' | 'releasing' | 'fenced';
}

/** A delivery held by the key gate until its key is free and a slot is. */
interface Waiting {
  readonly delivery: Delivery;
  readonly owned: Owned;
  readonly channel: number;
  readonly key: string;
  /** The delivery's `type`: per-key limits are per job type. */
  readonly jobName: string | undefined;
  readonly done: () => void;
}

/** What a partitioned queue reports (health, `warren queues`). */
export interface PartitionStats {
  /** This process's membership id. */
  readonly member: string;
  /** Indexes of the partitions this process consumes now. */
  readonly owned: readonly number[];
  /** The members this process hears (itself included while it holds its lease). */
  readonly members: number;
  /** Deliveries waiting in this process for their key to be free. */
  readonly waiting: number;
  /** Per-key limits (a partitioned queue with `order: 'none'` whose jobs have them). */
  readonly limits?: KeyLimitStats;
}

/** A parked delivery held by its key's concurrency (no slot time known) is looked at again after this. */
const MIN_PARKED_RECHECK_MS = 50;

/** How many busiest keys a queue reports: a bound on the metric's cardinality. */
export const BUSIEST_KEYS = 10;

/**
 * The consumer of a queue with ordered partitions (docs/guide/ordered-partitions.md): joins the membership,
 * consumes the partitions the assignment gives it (a channel each, single active consumer), hands over those it
 * loses (running jobs finish and are acked, then the channel closes), fences all when its lease ends. A key
 * gate starts a delivery only when no job of its key runs here, in delivery order, at most `concurrency` at once.
 */
export class PartitionedConsumer {
  private readonly owned = new Map<number, Owned>();
  private readonly membership: PartitionMembership;
  private readonly waiting: Waiting[] = [];
  private readonly runningKeys = new Set<string>();
  private running = 0;
  private finishedElsewhere = 0;
  private started = false;
  private paused = false;
  private generation = 0;
  private readonly handovers = new Set<Promise<void>>();
  private readonly partitions: readonly PlannedJobQueue[];
  /** Whether a key's jobs run one at a time, in order (`order: 'per-key'`); else per-key limits gate them. */
  private readonly ordered: boolean;
  /** Deliveries over their key's limit waiting aside, by partition: at most `heldPerPartition` each. */
  private held = 0;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  /** Deliveries over their key's rate waiting here for the key's slot (queues with a per-key rate). */
  private readonly parking: RateParking<Waiting> | undefined;

  constructor(
    readonly queue: PlannedJobQueue,
    private readonly settings: ConsumerSettings,
    private readonly deps: QueueConsumerDeps,
    private readonly options: PartitionedOptions,
  ) {
    this.partitions = options.partitions;
    this.ordered = queue.partitions!.ordered;
    const keyLimits = options.keyLimits;
    this.parking =
      keyLimits !== undefined && keyLimits.parkedPerPartition > 0
        ? new RateParking(keyLimits.parkedPerPartition, keyLimits.parkHorizonMs)
        : undefined;
    const member = `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
    this.membership = new PartitionMembership(
      deps.manager,
      queue.partitions!.membersExchange,
      member,
      membershipTiming(options.heartbeatMs),
      {
        membersChanged: (members) => this.assign(members),
        leaseLost: () => this.fenceAll(),
        // the waiting deliveries go through their own gate: per-key order, or per-key limits (pump)
        leaseRenewed: () => (this.ordered ? this.startNext() : this.pump()),
      },
      deps.log.child({ component: 'partitions' }),
      options.membershipProof,
    );
  }

  get activeJobs(): number {
    return this.running;
  }

  get handled(): number {
    let sum = this.finishedElsewhere;
    for (const owned of this.owned.values()) sum += owned.consumer.handled;
    return sum;
  }

  get isConsuming(): boolean {
    return this.started && !this.paused && [...this.owned.values()].every((o) => o.consumer.isConsuming);
  }

  get hasKeyLimits(): boolean {
    return this.options.keyLimits !== undefined;
  }

  /** A per-key override (the limits stream): applied to the next start, and to what waits aside now. */
  applyOverride(target: string, key: string, override: KeyLimitOverride | undefined): void {
    const keyLimits = this.options.keyLimits;
    if (keyLimits === undefined) return;
    keyLimits.limits.setOverride(target, key, override);
    this.parking?.wakeAll();
    this.pump();
  }

  stats(): PartitionStats {
    return {
      member: this.membership.memberId,
      owned: [...this.owned.keys()].sort((a, b) => a - b),
      members: this.membership.members.length,
      waiting: this.waiting.length,
      ...(this.options.keyLimits === undefined
        ? {}
        : {
            limits: {
              held: this.held + (this.parking?.size ?? 0),
              deferred: this.options.keyLimits.limits.deferred,
              busiestKeys: this.options.keyLimits.limits.busiest(BUSIEST_KEYS, Date.now()),
            },
          }),
    };
  }

  async open(generation: number): Promise<void> {
    this.generation = generation;
    await this.membership.open(generation);
    await Promise.all([...this.owned.values()].map((owned) => owned.consumer.open(generation)));
    this.dropStale();
  }

  async start(): Promise<void> {
    this.started = true;
    if (!this.paused) this.membership.start();
  }

  /** A paused process leaves the membership: its partitions go to the others, nothing here consumes. */
  async pause(): Promise<void> {
    this.paused = true;
    await this.handOverAll(this.options.handoverGraceMs);
  }

  async resume(): Promise<void> {
    this.paused = false;
    if (this.started) this.membership.start();
  }

  /** Leaves (the others take over at once), hands every partition over within `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.started = false;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    await this.handOverAll(graceMs);
    await this.membership.close();
  }

  private async handOverAll(graceMs: number): Promise<void> {
    const releases = [...this.owned.values()].map((owned) => this.release(owned, graceMs));
    this.membership.leave();
    await Promise.all([...releases, ...this.handovers]);
  }

  /** The members changed: take the partitions won, hand over the ones lost. */
  private assign(members: readonly string[]): void {
    if (!this.started || this.paused) return;
    const owners = assignPartitions(members, this.partitions.length);
    const me = this.membership.memberId;
    owners.forEach((owner, index) => {
      const owned = this.owned.get(index);
      if (owner === me && owned === undefined) this.acquire(index);
      else if (owner !== me && owned !== undefined) void this.release(owned, this.options.handoverGraceMs);
    });
  }

  private acquire(index: number): void {
    // the consumer's callbacks read the entry made just below it
    let owned!: Owned;
    // per-key limits: room in each partition's prefetch for the deliveries waiting aside, so that a key at its
    // limit never fills the window the partition's other keys arrive through
    const keyLimits = this.options.keyLimits;
    const held =
      keyLimits === undefined
        ? 0
        : keyLimits.heldPerPartition + keyLimits.dueHeldPerPartition + keyLimits.parkedPerPartition;
    const settings = { ...this.settings, concurrency: this.settings.concurrency + held };
    const consumer = new QueueConsumer(this.partitions[index]!, settings, {
      ...this.deps,
      processor: { process: (delivery) => this.hold(delivery, owned) },
      // a lease run out fences here and now, before the watchdog's turn; a process leaving has no lease to
      // lose, and its handover acks what it finishes
      isFenced: () => {
        this.checkLease();
        return owned.state === 'fenced';
      },
      checkOwnership: () => this.checkLease(),
      channelLost: () => this.abortRunning(owned),
    });
    owned = { index, state: 'active', consumer };
    this.owned.set(index, owned);
    this.deps.log.debug({ partition: index }, 'partition acquired');
    consumer
      .open(this.generation)
      .then(() => consumer.start())
      .catch((err: unknown) =>
        this.deps.log.warn({ err, partition: index }, 'subscribing to a partition failed'),
      );
  }

  /** Handover: no new starts, backoffs end, running jobs finish and are acked, then the channel closes. */
  private release(owned: Owned, graceMs: number): Promise<void> {
    if (this.owned.get(owned.index) !== owned) return Promise.resolve();
    this.owned.delete(owned.index);
    owned.state = 'releasing';
    this.dropStale();
    for (const delivery of owned.consumer.deliveries)
      if (delivery.running?.isBackoff) delivery.running.abortForShutdown();
    const handover = owned.consumer
      .closeAfterRunning(graceMs, () => {
        owned.state = 'fenced';
      })
      .catch((err: unknown) =>
        this.deps.log.warn({ err, partition: owned.index }, 'handing a partition over failed'),
      )
      .finally(() => {
        this.finishedElsewhere += owned.consumer.handled;
        this.handovers.delete(handover);
        this.deps.log.debug({ partition: owned.index }, 'partition handed over');
      });
    this.handovers.add(handover);
    return handover;
  }

  /**
   * The lease ended: nothing of any partition starts or settles from now; running jobs abort; each channel
   * closes once the handlers' own code has returned (at most the handover grace later), so that while the
   * connection lives the broker hands no partition on under a handler still running here.
   */
  private fenceAll(): void {
    for (const owned of this.owned.values()) {
      owned.state = 'fenced';
      const running = [...owned.consumer.deliveries];
      this.abortRunning(owned);
      const fence = handlersEnded(running, this.options.handoverGraceMs)
        .then((ended) => {
          if (!ended)
            this.deps.log.warn(
              { partition: owned.index },
              'a handler ignored its aborted signal past the grace period; closing the fenced partition anyway',
            );
          // not awaited: on a connection the broker has dropped, amqplib's close may never answer
          void owned.consumer.closeNow();
        })
        .finally(() => {
          this.finishedElsewhere += owned.consumer.handled;
          this.handovers.delete(fence);
        });
      this.handovers.add(fence);
    }
    this.owned.clear();
    this.dropStale();
  }

  /**
   * Fences every owned partition unless the lease holds by the clock: whatever the membership believes, a
   * process resumed after a freeze starts and settles nothing (a delivery read from its socket after the
   * resume included).
   */
  private checkLease(): void {
    if (!this.membership.checkLease() && this.owned.size > 0) this.fenceAll();
  }

  /**
   * Aborts the jobs running from a partition whose deliveries the broker has back (a lost lease, a closed
   * channel): their acks can no longer count, and the partition's next owner runs them again.
   */
  private abortRunning(owned: Owned): void {
    const reason = new PartitionLostError(owned.consumer.queue.name, { queue: this.queue.key });
    for (const delivery of owned.consumer.deliveries) delivery.lose(reason);
    this.dropStale();
  }

  /** The partition consumer's processor: resolves when the delivery is settled, or dropped unsettled. */
  private hold(delivery: Delivery, owned: Owned): Promise<void> {
    // a partition being handed over starts nothing: the channel's close returns the delivery in order
    if (owned.state !== 'active') return Promise.resolve();
    const key = deliveredKey(delivery.message.properties.headers) ?? DEFAULT_KEY;
    if (!this.ordered) return this.admit(delivery, owned, key);
    // a free slot and a free key: nothing of this key waits (it would be running), so it starts at once
    if (this.running < this.settings.concurrency && !this.runningKeys.has(key) && this.membership.canStart())
      return this.run(delivery, owned, key);
    return new Promise((done) => {
      this.waiting.push({
        delivery,
        owned,
        channel: owned.consumer.channelCount,
        key,
        jobName: undefined,
        done,
      });
    });
  }

  /**
   * An unordered partition's delivery: starts when a slot is free and its key is under its limits; else waits
   * (for a slot, or aside for its key), or, when its partition already has `heldPerPartition` waiting aside, is
   * re-delayed without spending an attempt: a key at its limit never blocks the partition's other keys.
   */
  private admit(delivery: Delivery, owned: Owned, key: string): Promise<void> {
    const jobName = delivery.message.properties.type as string | undefined;
    const limits = this.options.keyLimits?.limits;
    if (this.waiting.length === 0 && this.running < this.settings.concurrency) {
      if (limits === undefined || limits.check(jobName, key, Date.now()).kind === 'run')
        return this.run(delivery, owned, key, jobName);
    }
    return new Promise((done) => {
      this.waiting.push({ delivery, owned, channel: owned.consumer.channelCount, key, jobName, done });
      this.pump();
    });
  }

  /**
   * Starts what may start: the parked keys whose slot came first, then the waiting deliveries in arrival order
   * until the slots are taken (what lies behind is looked at when one frees: O(what waits aside) a start, not
   * O(everything held)); parks or re-delays what is over its key's limit beyond the bounds.
   */
  private pump(): void {
    const keyLimits = this.options.keyLimits;
    const now = Date.now();
    this.releaseParked(now);
    const aside = new Map<Owned, number>();
    const asideDue = new Map<Owned, number>();
    const asideOfKey = new Map<string, number>();
    // parked keys due already wait for a free slot, which a run's end pumps for: no timer for them
    const parkedWake = () => {
      const at = this.parking?.nextDueAt ?? Number.POSITIVE_INFINITY;
      return at > now ? at : Number.POSITIVE_INFINITY;
    };
    let wakeAt = parkedWake();
    this.held = 0;
    for (let i = 0; i < this.waiting.length; ) {
      if (this.running >= this.settings.concurrency) break;
      const waiting = this.waiting[i]!;
      if (this.isStale(waiting)) {
        this.waiting.splice(i, 1);
        waiting.done();
        continue;
      }
      const verdict: KeyLimitVerdict =
        keyLimits === undefined ? { kind: 'run' } : keyLimits.limits.check(waiting.jobName, waiting.key, now);
      if (verdict.kind === 'run') {
        this.waiting.splice(i, 1);
        void this.run(waiting.delivery, waiting.owned, waiting.key, waiting.jobName).then(waiting.done);
        continue;
      }
      if (this.park(waiting, verdict, now)) {
        this.waiting.splice(i, 1);
        wakeAt = Math.min(wakeAt, parkedWake());
        continue;
      }
      // a job due within 11 delay units (a re-delayed one back early for its slot) waits aside in its own
      // bound first, so that the jobs held in arrival order never make it go round the levels again, late
      const due = keyLimits!.dueHeldPerPartition > 0 && keyLimits!.limits.isDueSoon(verdict, now);
      const dueCount = due ? (asideDue.get(waiting.owned) ?? 0) + 1 : 0;
      const count = (aside.get(waiting.owned) ?? 0) + 1;
      if (due && dueCount <= keyLimits!.dueHeldPerPartition) asideDue.set(waiting.owned, dueCount);
      else if (count <= keyLimits!.heldPerPartition) aside.set(waiting.owned, count);
      else {
        this.waiting.splice(i, 1);
        const parked = this.parking?.ofKey(waiting.jobName, waiting.key) ?? 0;
        this.defer(waiting, verdict, (asideOfKey.get(waiting.key) ?? 0) + parked, now);
        continue;
      }
      asideOfKey.set(waiting.key, (asideOfKey.get(waiting.key) ?? 0) + 1);
      this.held += 1;
      if (verdict.freeAt !== undefined) wakeAt = Math.min(wakeAt, verdict.freeAt);
      i++;
    }
    this.wakeFor(wakeAt);
  }

  /**
   * Parks a delivery over its key's rate whose slot (after the key's parked ones) is within the parking's
   * horizon, if its partition has room: it starts on that slot from here, with no trip through the broker.
   */
  private park(
    waiting: Waiting,
    verdict: Extract<KeyLimitVerdict, { kind: 'capped' }>,
    now: number,
  ): boolean {
    if (this.parking === undefined || verdict.limit !== 'rate' || verdict.freeAt === undefined) return false;
    const n = this.parking.ofKey(waiting.jobName, waiting.key);
    const slotAt = this.options.keyLimits!.limits.nextSlot(waiting.jobName!, waiting.key, n, now);
    return slotAt !== undefined && this.parking.park(waiting, slotAt, verdict.freeAt, now);
  }

  /** Starts the parked deliveries whose key's slot has come, while the process has free slots. */
  private releaseParked(now: number): void {
    const parking = this.parking;
    if (parking === undefined || now < parking.nextDueAt) return;
    const limits = this.options.keyLimits!.limits;
    parking.release(now, (waiting): ParkedDecision => {
      if (this.isStale(waiting)) {
        waiting.done();
        return 'taken';
      }
      if (this.running >= this.settings.concurrency) return 'full';
      const verdict = limits.check(waiting.jobName, waiting.key, now);
      if (verdict.kind === 'capped') return { until: verdict.freeAt ?? now + MIN_PARKED_RECHECK_MS };
      void this.run(waiting.delivery, waiting.owned, waiting.key, waiting.jobName).then(waiting.done);
      return 'taken';
    });
  }

  /** Re-delays a waiting delivery over its key's limit that finds no room aside, spending no attempt. */
  private defer(
    waiting: Waiting,
    verdict: Extract<KeyLimitVerdict, { kind: 'capped' }>,
    waitingAside: number,
    now: number,
  ): void {
    const keyLimits = this.options.keyLimits!;
    const delayMs = keyLimits.limits.deferDelayMs(
      {
        jobName: waiting.jobName!,
        key: waiting.key,
        waitingAside,
        slotted: waiting.delivery.message.properties.headers?.[HEADERS.limited] === 'rate',
      },
      verdict,
      now,
    );
    void keyLimits
      .defer(waiting.delivery, delayMs, verdict.limit)
      .catch((err: unknown) => {
        this.deps.log.warn({ err, queue: this.queue.name }, 're-delaying a job over its key limit failed');
        waiting.delivery.requeue();
      })
      .finally(waiting.done);
  }

  /** Pumps again when the earliest key held for its rate may start. */
  private wakeFor(at: number): void {
    if (at >= this.wakeAt && this.wakeTimer !== undefined) return;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.wakeAt = at;
    if (!Number.isFinite(at)) return;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined;
        this.wakeAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, at - Date.now()),
    );
    this.wakeTimer.unref();
  }

  private run(delivery: Delivery, owned: Owned, key: string, jobName?: string): Promise<void> {
    this.checkLease();
    if (owned.state !== 'active') return Promise.resolve();
    this.running += 1;
    const limits = this.options.keyLimits?.limits;
    const startedAt = Date.now();
    if (this.ordered) this.runningKeys.add(key);
    else limits?.started(jobName, key, startedAt);
    return this.deps.processor
      .process(delivery)
      .catch((error: unknown) => {
        this.deps.log.error(
          { err: error, queue: this.queue.name },
          'unexpected error while processing a delivery',
        );
        delivery.requeue();
      })
      .finally(() => {
        this.running -= 1;
        if (this.ordered) {
          this.runningKeys.delete(key);
          this.startNext();
        } else {
          limits?.ended(jobName, key, Date.now() - startedAt);
          this.pump();
        }
      });
  }

  /**
   * Starts the earliest waiting deliveries whose key is free, while slots are and while the lease has its
   * margin (else they wait for the next renewal, or the fence).
   */
  private startNext(): void {
    if (this.waiting.length === 0) return;
    const canStart = this.membership.canStart();
    for (let i = 0; i < this.waiting.length && this.running < this.settings.concurrency; ) {
      const waiting = this.waiting[i]!;
      if (this.isStale(waiting)) {
        this.waiting.splice(i, 1);
        waiting.done();
      } else if (canStart && !this.runningKeys.has(waiting.key)) {
        this.waiting.splice(i, 1);
        void this.run(waiting.delivery, waiting.owned, waiting.key).then(waiting.done);
      } else i++;
    }
  }

  private isStale(waiting: Waiting): boolean {
    return waiting.owned.state !== 'active' || waiting.channel !== waiting.owned.consumer.channelCount;
  }

  /** Lets go of the deliveries of partitions handed over or of closed channels (the broker has them back). */
  private dropStale(): void {
    for (const parked of this.parking?.drop((waiting) => this.isStale(waiting)) ?? []) parked.done();
    for (let i = 0; i < this.waiting.length; ) {
      const waiting = this.waiting[i]!;
      if (this.isStale(waiting)) {
        this.waiting.splice(i, 1);
        waiting.done();
      } else i++;
    }
  }
}
