import { HEADERS } from '../message';
import type { Logger } from '../core';
import type { ResolvedRecordSigning } from './options';
import { newWriterId, signRecord, verifyRecord, type ProofFailure, type RecordRole } from './record-proof';
import { ReplayGuard, type GuardSnapshot } from './replay-guard';

/** Why a reader skipped a record: its proof (with a key), or its shape and bounds (always). */
export type SkipReason = ProofFailure | 'malformed' | 'too-large' | 'out-of-plan';

/** What `health().records` reports: records skipped by this process, per stream or channel. */
export interface RecordSkips {
  /** Whether this process signs its records and refuses unsigned ones. */
  readonly isSigning: boolean;
  /** Records skipped since start, all streams. */
  readonly skipped: number;
  readonly byRole: Readonly<Partial<Record<RecordRole, Readonly<Partial<Record<SkipReason, number>>>>>>;
}

/** One warning per role per this long, with the count of those not logged. */
const LOG_EVERY_MS = 10_000;

/**
 * The record codec of one warren instance (or ops client): signs what it writes, verifies and counts
 * what it reads. Every stream of warren's own and the control exchange go through it, so each new
 * stream inherits the same proof, counters and bounded warnings. Without a key nothing is signed and
 * `accept` only checks that there is no proof to check; the readers' shape checks still run and report
 * their skips here.
 */
export class RecordTrust {
  /** This writer's id in every proof it writes. */
  readonly writer = newWriterId();
  private seq = 0;
  private total = 0;
  private readonly skips = new Map<RecordRole, Map<SkipReason, number>>();
  private readonly lastLog = new Map<RecordRole, { at: number; quiet: number }>();
  private hasWarnedSigned = false;

  constructor(
    private readonly namespace: string,
    private readonly signing: ResolvedRecordSigning | undefined,
    private readonly log: Logger,
  ) {}

  get isSigning(): boolean {
    return this.signing !== undefined;
  }

  /** The headers that prove a record (none without a key). */
  proof(role: RecordRole, body: Buffer, extra = ''): Record<string, string> {
    if (this.signing === undefined) return {};
    this.seq += 1;
    return {
      [HEADERS.proof]: signRecord(this.signing, this.namespace, role, this.writer, this.seq, body, extra),
    };
  }

  /** A reader of one stream: its replay guard lives as long as the reader does (one pass over the stream). */
  reader(role: RecordRole): RecordReader {
    return new RecordReader(this, role);
  }

  /** @internal Verifies a proof (with a key) and applies the guard; counts and logs a refusal. */
  check(
    role: RecordRole,
    body: Buffer,
    headers: Record<string, unknown> | undefined,
    extra: string,
    guard: ReplayGuard | undefined,
    where: Record<string, unknown>,
  ): boolean {
    if (this.signing === undefined) {
      if (!this.hasWarnedSigned && headers?.[HEADERS.proof] !== undefined) this.warnSigned(role);
      return true;
    }
    const origin = verifyRecord(this.signing, this.namespace, role, headers?.[HEADERS.proof], body, extra);
    if (origin === 'unsigned' && this.signing.acceptUnsigned) return true;
    if (typeof origin === 'string') return this.skip(role, origin, where);
    if (guard !== undefined && !guard.accept(origin)) return this.skip(role, 'replayed', where);
    return true;
  }

  /** A process without a key reading signed records: the key settings of the namespace disagree. */
  private warnSigned(role: RecordRole): void {
    this.hasWarnedSigned = true;
    this.log.warn(
      { role },
      'read a signed record but this process has no signingKey: give every process of the namespace the same key',
    );
  }

  /** Counts a skipped record and logs it, at most once per role every LOG_EVERY_MS. Returns false. */
  skip(role: RecordRole, reason: SkipReason, where: Record<string, unknown> = {}): false {
    this.total += 1;
    const byReason = this.skips.get(role) ?? new Map<SkipReason, number>();
    byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
    this.skips.set(role, byReason);
    const now = Date.now();
    const last = this.lastLog.get(role);
    if (last !== undefined && now - last.at < LOG_EVERY_MS) {
      last.quiet += 1;
      return false;
    }
    this.log.warn(
      { role, reason, ...where, ...(last?.quiet ? { notLogged: last.quiet } : {}) },
      `skipped a record of ${role} that warren cannot trust`,
    );
    this.lastLog.set(role, { at: now, quiet: 0 });
    return false;
  }

  skipped(): RecordSkips {
    const byRole: Partial<Record<RecordRole, Partial<Record<SkipReason, number>>>> = {};
    for (const [role, reasons] of this.skips) byRole[role] = Object.fromEntries(reasons);
    return { isSigning: this.isSigning, skipped: this.total, byRole };
  }
}

/** What one stream reader asks: is this record warren's, and new to this reader? */
export class RecordReader {
  private readonly guard = new ReplayGuard();

  constructor(
    private readonly trust: RecordTrust,
    readonly role: RecordRole,
  ) {}

  /** True when the record may be applied: proven (with a key) and not seen before by this reader. */
  accept(
    body: Buffer,
    headers: Record<string, unknown> | undefined,
    where: Record<string, unknown> = {},
    extra = '',
  ): boolean {
    return this.trust.check(this.role, body, headers, extra, this.guard, where);
  }

  /**
   * The proof only, no replay guard: for a record read again at an offset an earlier (guarded) pass
   * accepted, such as a stored copy or a letter shown in full.
   */
  verify(body: Buffer, headers: Record<string, unknown> | undefined, extra = ''): boolean {
    return this.trust.check(this.role, body, headers, extra, undefined, {});
  }

  /** Counts a record skipped for its shape or bounds. Returns false. */
  skip(reason: SkipReason, where: Record<string, unknown> = {}): false {
    return this.trust.skip(this.role, reason, where);
  }

  /** What the replay guard has applied, for a checkpoint of this reader's pass. */
  guardSnapshot(): GuardSnapshot {
    return this.guard.snapshot();
  }

  /** Takes over a checkpoint's replay memory: false (and nothing taken) when it is malformed. */
  restoreGuard(snapshot: unknown): boolean {
    return this.guard.restore(snapshot);
  }
}
