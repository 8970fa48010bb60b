import { performance } from 'node:perf_hooks';
import type * as amqp from 'amqplib';
import type { Logger } from '../core';
import { ManagedChannel, type ConnectionManager } from '../connection';
import { memberQueueArguments } from '../topology';

/** How a membership times itself, all derived from the heartbeat (docs/guide/ordered-partitions.md). */
export interface MembershipTiming {
  /** A heartbeat every this many ms. */
  readonly heartbeatMs: number;
  /** A member's own lease: renewed by each of its heartbeats that comes back to it, for this long. */
  readonly leaseMs: number;
  /**
   * A member starts no job once less than this is left of its lease (two heartbeats of its own not back):
   * a job starts only well before anyone could take its partition.
   */
  readonly startMarginMs: number;
  /** A member not heard for this long is gone; above leaseMs, so a frozen member's lease ends first. */
  readonly memberTimeoutMs: number;
  /** A newcomer listens this long before it claims partitions, so that it knows the others first. */
  readonly settleMs: number;
}

/** Lease 4 heartbeats (starts stop with 2 left), timeout 6, settle 1. */
export function membershipTiming(heartbeatMs: number): MembershipTiming {
  return {
    heartbeatMs,
    leaseMs: 4 * heartbeatMs,
    startMarginMs: 2 * heartbeatMs,
    memberTimeoutMs: 6 * heartbeatMs,
    settleMs: heartbeatMs,
  };
}

/**
 * The proof of heartbeats (the record codec's, given by the composition root: coordination does not import
 * records). With a signing key a heartbeat carries a proof and a heard one counts only if its proof holds and
 * it is new to this member (a replay does not count); without a key every heartbeat counts.
 */
export interface MembershipProof {
  /** The headers proving a heartbeat's body (none without a key). */
  sign(body: Buffer): Record<string, string>;
  /** Whether a heard heartbeat counts; a refusal is counted (`health().records`) and logged by the codec. */
  accept(body: Buffer, headers: Record<string, unknown> | undefined): boolean;
}

/** Heartbeats counted as they are: no signing key. */
export const UNSIGNED_MEMBERSHIP: MembershipProof = { sign: () => ({}), accept: () => true };

/** What a membership tells its owner. */
export interface MembershipListener {
  /** The live members changed (sorted ids, this member included while its lease holds). */
  membersChanged(members: readonly string[]): void;
  /** This member's lease ended (a freeze, a lost connection): it must stop and fence at once. */
  leaseLost(): void;
  /** One of this member's heartbeats came back: jobs held for the start margin may start. */
  leaseRenewed(): void;
}

interface Heartbeat {
  readonly member: string;
  readonly kind: 'beat' | 'leave';
  /** The sender's monotonic clock when it sent it: only the sender reads it back (its lease). */
  readonly sentAt: number;
}

/** A heartbeat is about 80 bytes: a larger body is not one. */
const MAX_HEARTBEAT_BYTES = 1024;

/** How often the lease is checked: bounds how long a resumed process runs before it notices a freeze. */
const WATCHDOG_MS = 10;

/**
 * The live worker processes of one partitioned queue, with nothing but the broker: each member has an
 * exclusive queue bound to the queue's fanout members exchange and sends a heartbeat there every
 * `heartbeatMs`; every member hears every heartbeat. A member leaving says so; one not heard for
 * `memberTimeoutMs` is gone. A member that hears a newcomer answers with a heartbeat at once, so a join
 * settles within a round trip and `settleMs`.
 *
 * The lease: a member's own heartbeat coming back through the broker proves it is alive and connected;
 * it renews the member's lease until `sentAt + leaseMs`. A watchdog, and the connection's loss, end it
 * synchronously: the owner fences its partitions before any I/O callback of the resumed process runs.
 */
export class PartitionMembership {
  private readonly managed: ManagedChannel;
  private readonly lastHeard = new Map<string, number>();
  private leaseUntil = 0;
  private hasLease = false;
  /** Left (paused or closing) while its partitions are handed over. */
  private leaving = false;
  private joinedAt = 0;
  private running = false;
  private beatTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private published: readonly string[] = [];
  private readonly onDisconnected = () => this.loseLease('connection lost');

  constructor(
    private readonly manager: ConnectionManager,
    private readonly exchange: string,
    readonly memberId: string,
    private readonly timing: MembershipTiming,
    private readonly listener: MembershipListener,
    private readonly log: Logger,
    private readonly proof: MembershipProof = UNSIGNED_MEMBERSHIP,
  ) {
    this.managed = new ManagedChannel(
      manager,
      { name: `members ${exchange}`, confirm: false, setup: (channel) => this.setup(channel) },
      log,
    );
  }

  /**
   * Checks the lease now (not at the watchdog's next turn): whether it holds, by the clock alone; a lease
   * that ran out ends here, synchronously, with the listener's `leaseLost`. A handler reading `ctx.signal`
   * after a freeze runs this first, and so does every start and settle of a partition's job.
   */
  checkLease(): boolean {
    // a member handing its partitions over has left: the broker's single active consumer still fences it
    if (this.leaving) return true;
    const holds = performance.now() < this.leaseUntil;
    if (!holds && this.hasLease) this.loseLease('lease expired');
    return holds;
  }

  /**
   * Whether a job may start now: the lease holds with `startMarginMs` to spare (a member handing its
   * partitions over starts nothing anyway). Ends the lease like `checkLease` when it ran out.
   */
  canStart(): boolean {
    if (this.leaving) return true;
    return this.checkLease() && performance.now() < this.leaseUntil - this.timing.startMarginMs;
  }

  /** The live members as last published to the listener. */
  get members(): readonly string[] {
    return this.published;
  }

  open(generation: number): Promise<void> {
    return this.managed.open(generation);
  }

  /** Joins: heartbeats, the watchdog and the connection's loss as a lease end. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.leaving = false;
    this.manager.on('disconnected', this.onDisconnected);
    this.rejoin();
    this.beatTimer = setInterval(() => this.tick(), this.timing.heartbeatMs);
    this.watchdog = setInterval(() => this.checkLease(), WATCHDOG_MS);
    this.beatTimer.unref();
    this.watchdog.unref();
  }

  /** Leaves, telling the others (they take over at once); `start` joins again (a paused queue resumed). */
  leave(): void {
    if (!this.running) return;
    this.running = false;
    this.manager.off('disconnected', this.onDisconnected);
    clearInterval(this.beatTimer);
    clearInterval(this.watchdog);
    clearTimeout(this.settleTimer);
    this.hasLease = false;
    this.leaving = true;
    this.published = [];
    this.send('leave');
  }

  /** Leaves for good and closes its queue. */
  async close(): Promise<void> {
    this.leave();
    await this.managed.close();
  }

  private async setup(channel: amqp.Channel): Promise<void> {
    const { queue } = await channel.assertQueue('', {
      exclusive: true,
      autoDelete: true,
      durable: false,
      arguments: memberQueueArguments(this.timing.memberTimeoutMs),
    });
    await channel.bindQueue(queue, this.exchange, '');
    await channel.consume(queue, (message) => message && this.heard(message), { noAck: true });
    if (this.running) this.send('beat');
  }

  /** Starts over as a newcomer: forgets everyone, listens for settleMs, then counts itself in. */
  private rejoin(): void {
    this.lastHeard.clear();
    this.hasLease = false;
    this.joinedAt = performance.now();
    this.send('beat');
    clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => this.publish(), this.timing.settleMs);
    this.settleTimer.unref();
  }

  private tick(): void {
    this.send('beat');
    const now = performance.now();
    for (const [member, at] of this.lastHeard)
      if (now - at > this.timing.memberTimeoutMs) this.lastHeard.delete(member);
    this.publish();
  }

  private heard(message: amqp.ConsumeMessage): void {
    // a process that has not joined (a publisher that never starts its worker) never answers
    if (!this.running) return;
    if (message.content.length > MAX_HEARTBEAT_BYTES) return;
    if (!this.proof.accept(message.content, message.properties.headers)) return;
    let beat: Heartbeat;
    try {
      beat = JSON.parse(message.content.toString('utf8')) as Heartbeat;
    } catch {
      return;
    }
    if (typeof beat?.member !== 'string') return;
    const now = performance.now();
    // a beat of this member's "from the future" is no proof of anything (only this member reads sentAt)
    if (beat.member === this.memberId && typeof beat.sentAt === 'number' && beat.sentAt > now) return;
    if (beat.member === this.memberId) {
      if (beat.kind !== 'beat' || !this.running || typeof beat.sentAt !== 'number') return;
      // a beat sent before the last rejoin proves nothing about the member since
      if (beat.sentAt < this.joinedAt) return;
      this.leaseUntil = Math.max(this.leaseUntil, beat.sentAt + this.timing.leaseMs);
      if (!this.hasLease && now - this.joinedAt >= this.timing.settleMs && now < this.leaseUntil) {
        this.hasLease = true;
        this.publish();
      }
      if (this.hasLease) this.listener.leaseRenewed();
      return;
    }
    if (beat.kind === 'leave') {
      if (this.lastHeard.delete(beat.member)) this.publish();
      return;
    }
    const isNew = !this.lastHeard.has(beat.member);
    this.lastHeard.set(beat.member, now);
    if (isNew) {
      this.send('beat');
      this.publish();
    }
  }

  /** Tells the listener the live members if they changed; this member counts only while it holds its lease. */
  private publish(): void {
    if (!this.running) return;
    if (
      !this.hasLease &&
      performance.now() - this.joinedAt >= this.timing.settleMs &&
      this.leaseUntil > performance.now()
    )
      this.hasLease = true;
    const members = [...this.lastHeard.keys()];
    if (this.hasLease) members.push(this.memberId);
    members.sort();
    if (members.length === this.published.length && members.every((m, i) => m === this.published[i])) return;
    this.published = members;
    this.log.debug({ member: this.memberId, members }, 'partition members changed');
    this.listener.membersChanged(members);
  }

  private loseLease(reason: string): void {
    if (!this.hasLease) return;
    this.log.warn(
      { member: this.memberId, reason },
      'partition lease lost; fencing every owned partition and joining again',
    );
    this.hasLease = false;
    this.leaseUntil = 0;
    this.published = [];
    this.listener.leaseLost();
    if (this.running) this.rejoin();
  }

  private send(kind: Heartbeat['kind']): void {
    const channel = this.managed.current;
    if (channel === undefined) return;
    const beat: Heartbeat = { member: this.memberId, kind, sentAt: performance.now() };
    const body = Buffer.from(JSON.stringify(beat));
    try {
      channel.publish(this.exchange, '', body, {
        contentType: 'application/json',
        headers: this.proof.sign(body),
      });
    } catch {
      /* the channel closed: the next heartbeat goes on the re-opened one */
    }
  }
}
