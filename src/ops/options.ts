import { checkInteger, checkNonEmptyString, ConfigurationError, validationMessage } from '../core';
import {
  resolveDeadLetterLogOptions,
  type DeadLetterLogOptions,
  type ResolvedDeadLetterLogOptions,
} from '../dead-letter-log';
import { resolveRecordSigning, type ResolvedRecordSigning } from '../records';
import type { WarrenOptions } from '../warren';

/** Where RabbitMQ's management HTTP API is: needed by topology diff/verify and for unacked counts. */
export interface ManagementOptions {
  /** Root of the management API, e.g. `http://127.0.0.1:15672` (no trailing `/api`). */
  readonly url: string;
  /** Default 'guest' (RabbitMQ's default user, which only works over loopback). */
  readonly username?: string;
  readonly password?: string;
  /** The vhost warren uses. Default '/'. */
  readonly vhost?: string;
  /** How long one HTTP request may take, ms. Default 10 000. */
  readonly timeoutMs?: number;
}

export interface ResolvedManagementOptions {
  readonly url: string;
  readonly username: string;
  readonly password: string;
  readonly vhost: string;
  readonly timeoutMs: number;
}

/**
 * Everything `createOps` takes: the same topology and job classes the application gives createWarren
 * (so that one config module serves both), plus where the management API is and how long to wait for
 * processes to answer.
 */
export interface OpsOptions
  extends Pick<
    WarrenOptions,
    | 'url'
    | 'connection'
    | 'namespace'
    | 'topology'
    | 'jobs'
    | 'delay'
    | 'queues'
    | 'scheduler'
    | 'publisher'
    | 'signingKey'
  > {
  /** The management HTTP API; without it `diff`, `verify` fail with MANAGEMENT_NOT_CONFIGURED. */
  readonly management?: ManagementOptions;
  /**
   * How long `processes`, `pause`, `resume` and `schedules` gather answers, ms. A process that has not
   * answered by then is not listed. Default 1500.
   */
  readonly replyTimeoutMs?: number;
  /** The dead-letter log's retention (give the same as the workers' `deadLetterLog`). */
  readonly deadLetterLog?: DeadLetterLogOptions;
}

export const OPS_DEFAULTS = Object.freeze({
  replyTimeoutMs: 1500,
  management: Object.freeze({ username: 'guest', password: 'guest', vhost: '/', timeoutMs: 10_000 }),
});

export interface ResolvedOpsOptions {
  readonly replyTimeoutMs: number;
  readonly management: ResolvedManagementOptions | undefined;
  readonly deadLetterLog: ResolvedDeadLetterLogOptions;
  /** The workers' `signingKey`, resolved: ops signs its records and requests and verifies what it reads. */
  readonly signing: ResolvedRecordSigning | undefined;
}

export function resolveOpsOptions(input: OpsOptions): ResolvedOpsOptions {
  const replyTimeoutMs = checkInteger(
    'replyTimeoutMs',
    input.replyTimeoutMs ?? OPS_DEFAULTS.replyTimeoutMs,
    1,
    600_000,
  );
  const deadLetterLog = resolveDeadLetterLogOptions(input.deadLetterLog);
  const signing = resolveRecordSigning(input.signingKey);
  const m = input.management;
  if (m === undefined)
    return Object.freeze({ replyTimeoutMs, deadLetterLog, signing, management: undefined });
  const url = checkNonEmptyString('management.url', m.url);
  if (!/^https?:\/\/[^/]/.test(url))
    throw new ConfigurationError(validationMessage('management.url', 'must be an http(s) URL', url));
  const defaults = OPS_DEFAULTS.management;
  return Object.freeze({
    replyTimeoutMs,
    deadLetterLog,
    signing,
    management: Object.freeze({
      url: url.replace(/\/+$/, ''),
      username: checkNonEmptyString('management.username', m.username ?? defaults.username),
      password: m.password ?? defaults.password,
      vhost: checkNonEmptyString('management.vhost', m.vhost ?? defaults.vhost),
      timeoutMs: checkInteger('management.timeoutMs', m.timeoutMs ?? defaults.timeoutMs, 1),
    }),
  });
}
