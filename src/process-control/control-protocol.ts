/**
 * The control protocol: what warren/ops sends on the control exchange (`<namespace>.warren.control`,
 * fanout) and what every warren process answers. JSON, content type application/json.
 *
 * Request (ops -> every process), properties `replyTo` (RabbitMQ direct reply-to) and `correlationId`:
 *   { "v": 1, "command": "status", "t": <ms since epoch> }
 *   { "v": 1, "command": "sync-pause", "queue": "<queue key>", "t": <ms since epoch> }
 *   { "v": 1, "command": "sync-remove", "t": <ms since epoch> }
 * With a signing key, requests and replies carry `warren-proof` (docs/reference/trust.md), bound to
 * their correlation id.
 * `sync-pause` does not say "pause" or "resume": it tells the process that an operator changed the
 * pause marker of that queue, and the process reads the marker on the broker (the single source of
 * truth) and holds or releases the queue accordingly. A forged request can therefore make a process
 * re-read the broker, never pause a queue nobody paused.
 * `sync-remove` likewise: the process reads the namespace's removal marker and, only while it exists,
 * answers and then closes (an operator removes the namespace: docs/operating/removing-a-namespace.md).
 *
 * Reply (process -> replyTo, same correlationId): { "v": 1, "command": ..., "queue"?: ...,
 * "process": ProcessStatus }.
 *
 * Control messages come from outside the process and are untrusted: a request that does not parse, has
 * another version, an unknown command, a malformed queue key or no reply address is ignored (logged),
 * never acted on and never a crash.
 */
import { parseJsonObject, type KeyLimitStats } from '../core';

export const CONTROL_PROTOCOL_VERSION = 1;
export const CONTROL_COMMANDS = ['status', 'sync-pause', 'sync-remove'] as const;
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];

/** Requests larger than this are not parsed. */
export const MAX_CONTROL_MESSAGE_BYTES = 64 * 1024;
const QUEUE_KEY = /^[A-Za-z0-9_.:-]{1,200}$/;

export interface ControlRequest {
  readonly v: typeof CONTROL_PROTOCOL_VERSION;
  readonly command: ControlCommand;
  /** The queue key, for `sync-pause`. */
  readonly queue?: string;
  /**
   * When it was sent (ms since epoch): a process with a signing key refuses a request older than a
   * minute, so a copy of a signed request cannot be replayed later. Older clients omit it.
   */
  readonly t?: number;
}

/** One job queue as a process sees it. */
export interface ProcessQueueStatus {
  /** Topology key (`email`). */
  readonly key: string;
  /** Whether this process has a subscription on the queue now. */
  readonly consuming: boolean;
  /** Held by anyone: code (`user`), an operator (`operator`) or an open circuit breaker (its name). */
  readonly paused: boolean;
  readonly holders: readonly string[];
  readonly activeJobs: number;
  /**
   * Deliveries this process finished handling on the queue since it started (acked, retried, dead):
   * its change between two replies is the processing rate. A process of an older warren omits it.
   */
  readonly handled?: number;
  /**
   * A queue with fairness: jobs waiting in this process for their key's turn, deliveries without a valid
   * key since start, and the keys with the most jobs waiting (at most 5). docs/guide/fair-share.md.
   */
  readonly fairness?: {
    readonly waiting: number;
    readonly unkeyed: number;
    readonly busiestKeys: readonly { readonly key: string; readonly waiting: number }[];
  };
  /**
   * A queue with ordered partitions: the indexes of the partitions this process consumes and the members it
   * hears. docs/guide/ordered-partitions.md.
   */
  readonly partitions?: { readonly owned: readonly number[]; readonly members: number };
  /**
   * A queue with per-key limits: deliveries waiting aside in this process because their key is at its limit,
   * those re-delayed since start, and the keys with the most jobs running here (at most 10) with their starts
   * in the current window. docs/guide/per-key-limits.md.
   */
  readonly keyLimits?: KeyLimitStats;
}

export interface ProcessScheduleStatus {
  readonly id: string;
  readonly job: string;
  readonly pattern: string;
  readonly tz: string;
  /** ISO 8601. */
  readonly nextFireAt: string;
  readonly lastFiredAt?: string;
}

/** What a warren process says about itself. */
export interface ProcessStatus {
  /** Random per warren instance, fixed for its life. */
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  /** warren's version in that process. */
  readonly version: string;
  /** ISO 8601 time the instance was created. */
  readonly startedAt: string;
  readonly connected: boolean;
  /** Job queues this process has handlers for. */
  readonly queues: readonly ProcessQueueStatus[];
  readonly breakers: readonly { readonly name: string; readonly state: string }[];
  /** Whether it leads cron now (fires the schedules). */
  readonly isLeader: boolean;
  readonly schedules: readonly ProcessScheduleStatus[];
  /**
   * The jobs running in the process now, oldest first (at most 50), with their latest progress: listed by
   * processes that run with `aggregates` on (docs/guide/aggregates.md), absent otherwise.
   */
  readonly running?: readonly ProcessRunningJob[];
}

/** A job running in a process, as its status reply says. */
export interface ProcessRunningJob {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
  /** When the attempt started, ms since epoch (that process's clock). */
  readonly startedAt: number;
  /** The latest progress: a number, or anything else as JSON (cut to 200 characters). */
  readonly progress?: number | string;
}

export interface ControlReply {
  readonly v: typeof CONTROL_PROTOCOL_VERSION;
  readonly command: ControlCommand;
  readonly queue?: string;
  readonly process: ProcessStatus;
}

/** A parsed request, or the reason it is refused. */
export function parseControlRequest(content: Buffer): ControlRequest | { readonly refused: string } {
  if (content.length > MAX_CONTROL_MESSAGE_BYTES)
    return { refused: `larger than ${MAX_CONTROL_MESSAGE_BYTES} bytes` };
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    return { refused: 'not JSON' };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { refused: 'not an object' };
  const { v, command, queue, t } = body as Record<string, unknown>;
  const sent = typeof t === 'number' && Number.isSafeInteger(t) ? { t } : {};
  if (v !== CONTROL_PROTOCOL_VERSION) return { refused: `unsupported version ${JSON.stringify(v)}` };
  if (!CONTROL_COMMANDS.includes(command as ControlCommand))
    return { refused: `unknown command ${JSON.stringify(command)?.slice(0, 60)}` };
  if (command === 'sync-pause') {
    if (typeof queue !== 'string' || !QUEUE_KEY.test(queue))
      return { refused: `sync-pause needs a queue key (got ${JSON.stringify(queue)?.slice(0, 60)})` };
    return { v, command, queue, ...sent };
  }
  return { v, command: command as ControlCommand, ...sent };
}

/** A parsed reply, or undefined when it is not one (replies are untrusted too): checked field by field. */
export function parseControlReply(content: Buffer): ControlReply | undefined {
  const body = parseJsonObject(content, 16 * MAX_CONTROL_MESSAGE_BYTES);
  if (body === undefined || body.v !== CONTROL_PROTOCOL_VERSION) return undefined;
  if (!CONTROL_COMMANDS.includes(body.command as ControlCommand)) return undefined;
  if (body.queue !== undefined && !isText(body.queue)) return undefined;
  return isProcessStatus(body.process) ? (body as unknown as ControlReply) : undefined;
}

const MAX_TEXT = 1000;
const MAX_ENTRIES = 10_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_TEXT;
}

function isCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isListOf(value: unknown, check: (entry: unknown) => boolean): boolean {
  return Array.isArray(value) && value.length <= MAX_ENTRIES && value.every(check);
}

function isQueueStatus(q: unknown): boolean {
  return (
    isObject(q) &&
    isText(q.key) &&
    typeof q.consuming === 'boolean' &&
    typeof q.paused === 'boolean' &&
    isListOf(q.holders, isText) &&
    isCount(q.activeJobs) &&
    (q.handled === undefined || isCount(q.handled)) &&
    (q.fairness === undefined || isFairnessStatus(q.fairness)) &&
    (q.partitions === undefined ||
      (isObject(q.partitions) && isListOf(q.partitions.owned, isCount) && isCount(q.partitions.members))) &&
    (q.keyLimits === undefined || isKeyLimitStatus(q.keyLimits))
  );
}

function isKeyLimitStatus(l: unknown): boolean {
  return (
    isObject(l) &&
    isCount(l.held) &&
    isCount(l.deferred) &&
    isListOf(
      l.busiestKeys,
      (k) =>
        isObject(k) &&
        typeof k.key === 'string' &&
        k.key.length <= 255 &&
        isCount(k.running) &&
        isCount(k.recentStarts),
    )
  );
}

function isFairnessStatus(f: unknown): boolean {
  return (
    isObject(f) &&
    isCount(f.waiting) &&
    isCount(f.unkeyed) &&
    isListOf(
      f.busiestKeys,
      (k) => isObject(k) && typeof k.key === 'string' && k.key.length <= 255 && isCount(k.waiting),
    )
  );
}

function isScheduleStatus(s: unknown): boolean {
  return (
    isObject(s) &&
    isText(s.id) &&
    isText(s.job) &&
    isText(s.pattern) &&
    isText(s.tz) &&
    isText(s.nextFireAt) &&
    (s.lastFiredAt === undefined || isText(s.lastFiredAt))
  );
}

function isRunningJob(r: unknown): boolean {
  return (
    isObject(r) &&
    isText(r.jobId) &&
    isText(r.name) &&
    isText(r.queue) &&
    isCount(r.attempt) &&
    isCount(r.startedAt) &&
    (r.progress === undefined ||
      (typeof r.progress === 'number' && Number.isFinite(r.progress)) ||
      isText(r.progress))
  );
}

function isProcessStatus(p: unknown): p is ProcessStatus {
  return (
    isObject(p) &&
    isText(p.id) &&
    isText(p.host) &&
    isCount(p.pid) &&
    isText(p.version) &&
    isText(p.startedAt) &&
    typeof p.connected === 'boolean' &&
    isListOf(p.queues, isQueueStatus) &&
    isListOf(p.breakers, (b) => isObject(b) && isText(b.name) && isText(b.state)) &&
    typeof p.isLeader === 'boolean' &&
    isListOf(p.schedules, isScheduleStatus) &&
    (p.running === undefined || (isListOf(p.running, isRunningJob) && (p.running as unknown[]).length <= 100))
  );
}
