import { checkInteger, checkNonEmptyString, ConfigurationError, validationMessage } from '../core';
import {
  resolveDeadLetterLogOptions,
  type DeadLetterLogOptions,
  type ResolvedDeadLetterLogOptions,
} from '../dead-letter-log';
import { resolveRecordSigning, type ResolvedRecordSigning } from '../records';
import type { WarrenOptions } from '../warren';
import { redactCredentials } from './redact-credentials';

/** Where RabbitMQ's management HTTP API is: needed by topology diff/verify and for unacked counts. */
export interface ManagementOptions {
  /**
   * Root of the management API, e.g. `http://127.0.0.1:15672` (no trailing `/api`). A URL with
   * `user:password@` in it works (Node's fetch refuses such URLs, so warren takes the credentials out and
   * sends them as an Authorization header); nothing warren prints or throws shows the password.
   */
  readonly url: string;
  /**
   * Default: the URL's user, else 'guest' (RabbitMQ's default user, which only works over loopback).
   * The user needs the `monitoring` tag, or `management` with permissions on the vhost.
   */
  readonly username?: string;
  /** Default: the URL's password, else 'guest'. Keep it out of argv: the CLI reads $WARREN_MANAGEMENT_PASSWORD. */
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
 * processes to answer. Give the workers' `history` too when they run with it on: the plan then holds the
 * history stream with its retention (`topology plan`, `diff`, `verify`); without it the stream shows as
 * `extra` in `topology diff`. `ops.job()` reads the history either way.
 */
export interface OpsOptions
  extends Pick<
    WarrenOptions,
    | 'url'
    | 'connection'
    | 'namespace'
    | 'topology'
    | 'jobs'
    | 'jobDefaults'
    | 'delay'
    | 'queues'
    | 'scheduler'
    | 'publisher'
    | 'signingKey'
    | 'history'
    | 'aggregates'
  > {
  /** The management HTTP API; without it `diff`, `verify` fail with MANAGEMENT_NOT_CONFIGURED. */
  readonly management?: ManagementOptions;
  /**
   * How long `processes`, `pause`, `resume` and `schedules` gather answers, ms. A process that has not
   * answered by then is not listed. Default 1500.
   */
  readonly replyTimeoutMs?: number;
  /**
   * The dead-letter log's retention (give the same as the workers' `deadLetterLog`): the plan declares its
   * stream with it, and `topology diff` compares it.
   */
  readonly deadLetterLog?: DeadLetterLogOptions;
  /**
   * How `ops.dead` finds letters. `memory`: the first query reads the whole log into an index in this
   * process, which then follows the log, so later queries take milliseconds; the index holds about 2.3× the
   * log's bytes (for a long-lived process: the dashboard). `scan`: no index in the process; a query by job
   * id, payload field, reason or offsets reads the log's offset index and only the letters it points at,
   * any other reads the log once, and only the matches are kept (for a process that asks once: the `warren`
   * command uses it). Default `memory`.
   */
  readonly deadLetterIndex?: 'memory' | 'scan';
}

export const OPS_DEFAULTS = Object.freeze({
  replyTimeoutMs: 1500,
  deadLetterIndex: 'memory',
  management: Object.freeze({ username: 'guest', password: 'guest', vhost: '/', timeoutMs: 10_000 }),
});

export interface ResolvedOpsOptions {
  readonly replyTimeoutMs: number;
  readonly management: ResolvedManagementOptions | undefined;
  readonly deadLetterLog: ResolvedDeadLetterLogOptions;
  readonly deadLetterIndex: 'memory' | 'scan';
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
  const deadLetterIndex = input.deadLetterIndex ?? OPS_DEFAULTS.deadLetterIndex;
  if (deadLetterIndex !== 'memory' && deadLetterIndex !== 'scan')
    throw new ConfigurationError(
      validationMessage('deadLetterIndex', "must be 'memory' or 'scan'", deadLetterIndex),
    );
  const signing = resolveRecordSigning(input.signingKey);
  const m = input.management;
  if (m === undefined)
    return Object.freeze({ replyTimeoutMs, deadLetterLog, deadLetterIndex, signing, management: undefined });
  const { url, username, password } = splitCredentials(m);
  const defaults = OPS_DEFAULTS.management;
  return Object.freeze({
    replyTimeoutMs,
    deadLetterLog,
    deadLetterIndex,
    signing,
    management: Object.freeze({
      url,
      username: checkNonEmptyString('management.username', m.username ?? username ?? defaults.username),
      password: m.password ?? password ?? defaults.password,
      vhost: checkNonEmptyString('management.vhost', m.vhost ?? defaults.vhost),
      timeoutMs: checkInteger('management.timeoutMs', m.timeoutMs ?? defaults.timeoutMs, 1),
    }),
  });
}

/**
 * The management URL without its user info, and the user and password it carried (decoded). A URL's
 * credentials and a separate `username`/`password` that say otherwise are a configuration error: which
 * one was meant cannot be guessed. Messages show the URL with its password masked.
 */
function splitCredentials(m: ManagementOptions): { url: string; username?: string; password?: string } {
  const given = checkNonEmptyString('management.url', m.url);
  let parsed: URL | undefined;
  try {
    parsed = new URL(given);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || !/^https?:$/.test(parsed.protocol) || parsed.host === '')
    throw new ConfigurationError(
      validationMessage('management.url', 'must be an http(s) URL', redactCredentials(given)),
    );
  const username = parsed.username === '' ? undefined : decodeURIComponent(parsed.username);
  const password = parsed.password === '' ? undefined : decodeURIComponent(parsed.password);
  for (const [field, inUrl, separate] of [
    ['username', username, m.username],
    ['password', password, m.password],
  ] as const)
    if (inUrl !== undefined && separate !== undefined && inUrl !== separate)
      throw new ConfigurationError(
        validationMessage(
          `management.${field}`,
          'must match the one in management.url, or be given in one place only',
          field === 'password' ? '***' : separate,
        ),
      );
  parsed.username = '';
  parsed.password = '';
  return {
    url: parsed.toString().replace(/\/+$/, ''),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
  };
}
