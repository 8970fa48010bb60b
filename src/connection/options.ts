import {
  checkInteger,
  checkKnownKeys,
  checkOneOf,
  checkNonEmptyString,
  checkNumber,
  ConfigurationError,
  validationMessage,
} from '../core';

export interface ReconnectOptions {
  /** First delay after a lost connection. Default 100 ms. */
  readonly initialDelayMs?: number;
  /** Longest delay between attempts. Default 10 000 ms. */
  readonly maxDelayMs?: number;
  /**
   * Fraction (0..1) of each delay drawn at random, so a fleet does not reconnect in lockstep. Default 0.3.
   */
  readonly jitter?: number;
}

/**
 * Options of the TCP or TLS socket, passed to amqplib (and on to `net.connect` / `tls.connect`) as
 * they are. For `amqps://` URLs: `ca` (your CA when the broker's certificate is not signed by a system
 * CA), `cert` + `key` (+ `passphrase`) or `pfx` for a client certificate, `servername` (SNI, default
 * the URL's host name), `rejectUnauthorized` (default true; keep it).
 */
export interface SocketOptions {
  readonly ca?: string | Buffer | (string | Buffer)[];
  readonly cert?: string | Buffer | (string | Buffer)[];
  readonly key?: string | Buffer | (string | Buffer)[];
  readonly pfx?: string | Buffer;
  readonly passphrase?: string;
  readonly servername?: string;
  readonly rejectUnauthorized?: boolean;
  /**
   * Disables Nagle's algorithm on the socket, so a publish or an ack goes out at once instead of
   * waiting up to 40 ms for more to send. Default true.
   */
  readonly noDelay?: boolean;
  /** TCP keep-alive probes on the socket. Default false (AMQP heartbeats notice a dead peer). */
  readonly keepAlive?: boolean;
  /** Idle time before the first keep-alive probe. Default 0 (the OS's). */
  readonly keepAliveDelay?: number;
}

export interface ConnectionOptions {
  /**
   * Broker URL, or a list of cluster nodes tried in turn. Default: `WARREN_URL`, then `AMQP_URL`
   * from the environment (an exported but empty one counts as not set), then
   * `amqp://guest:guest@127.0.0.1:5672`.
   */
  readonly url?: string | readonly string[];
  /** AMQP heartbeat in seconds; a dead peer is noticed after about two of them. Default 5. */
  readonly heartbeatSeconds?: number;
  /** Shown in the management UI and `rabbitmqctl list_connections`. Default `warren <pid>`. */
  readonly connectionName?: string;
  /** How long `createWarren` keeps trying before it gives up with CONNECTION_FAILED. Default 10 000 ms. */
  readonly connectTimeoutMs?: number;
  readonly reconnect?: ReconnectOptions;
  /** Socket and TLS options (CA, client certificate, SNI, no-delay); see SocketOptions. */
  readonly socket?: SocketOptions;
  /**
   * How to log in: `plain` (default) with the URL's user and password; `external` with the TLS client
   * certificate (RabbitMQ's `rabbitmq_auth_mechanism_ssl` plugin; the user is the certificate's name).
   */
  readonly auth?: 'plain' | 'external';
  /**
   * The broker's delivery acknowledgement timeout (`consumer_timeout` in rabbitmq.conf), ms. Default
   * 1 800 000, RabbitMQ's own. warren renews each delivery it holds on purpose (the cron and rate-limit
   * leadership tokens) at a third of it, so that the broker never times the holder out: RabbitMQ 3.x
   * closes the holder's channel then, 4.x cancels its consumer. On 3.12 and later warren also asks the
   * broker for a longer timeout per consumer (`x-consumer-timeout`; docs/guide/timeouts.md), so this
   * setting matters most on 3.10 and 3.11. Set it when you lowered `consumer_timeout` below 3 minutes.
   */
  readonly consumerTimeoutMs?: number;
}

export interface ResolvedConnectionOptions {
  readonly urls: readonly string[];
  readonly socket: Readonly<SocketOptions>;
  readonly auth: 'plain' | 'external';
  readonly heartbeatSeconds: number;
  readonly connectionName: string;
  readonly connectTimeoutMs: number;
  readonly reconnect: Required<ReconnectOptions>;
  readonly consumerTimeoutMs: number;
}

export const CONNECTION_DEFAULTS = Object.freeze({
  url: 'amqp://guest:guest@127.0.0.1:5672',
  heartbeatSeconds: 5,
  connectTimeoutMs: 10_000,
  reconnect: Object.freeze({ initialDelayMs: 100, maxDelayMs: 10_000, jitter: 0.3 }),
  socket: Object.freeze({ noDelay: true }),
  auth: 'plain' as const,
  consumerTimeoutMs: 1_800_000,
});

const KNOWN = {
  url: true,
  heartbeatSeconds: true,
  connectionName: true,
  connectTimeoutMs: true,
  reconnect: true,
  socket: true,
  auth: true,
  consumerTimeoutMs: true,
} as const satisfies Record<keyof ConnectionOptions, true>;

const KNOWN_RECONNECT = {
  initialDelayMs: true,
  maxDelayMs: true,
  jitter: true,
} as const satisfies Record<keyof ReconnectOptions, true>;

const KNOWN_SOCKET = {
  ca: true,
  cert: true,
  key: true,
  pfx: true,
  passphrase: true,
  servername: true,
  rejectUnauthorized: true,
  noDelay: true,
  keepAlive: true,
  keepAliveDelay: true,
} as const satisfies Record<keyof SocketOptions, true>;

/** An exported but empty `WARREN_URL=` counts as not set: the next source decides. */
function envUrl(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

export function resolveConnectionOptions(
  input: ConnectionOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnectionOptions {
  checkKnownKeys('connection', input, KNOWN);
  checkKnownKeys('connection.reconnect', input.reconnect, KNOWN_RECONNECT);
  checkKnownKeys('connection.socket', input.socket, KNOWN_SOCKET);
  return Object.freeze({
    urls: Object.freeze(
      resolveUrls(input.url ?? envUrl(env.WARREN_URL) ?? envUrl(env.AMQP_URL) ?? CONNECTION_DEFAULTS.url),
    ),
    socket: Object.freeze({ ...CONNECTION_DEFAULTS.socket, ...input.socket }),
    auth: checkOneOf('connection.auth', input.auth ?? CONNECTION_DEFAULTS.auth, ['plain', 'external']),
    heartbeatSeconds: checkInteger(
      'connection.heartbeatSeconds',
      input.heartbeatSeconds ?? CONNECTION_DEFAULTS.heartbeatSeconds,
      0,
      600,
    ),
    connectionName: checkNonEmptyString(
      'connection.connectionName',
      input.connectionName ?? `warren ${process.pid}`,
    ),
    connectTimeoutMs: checkInteger(
      'connection.connectTimeoutMs',
      input.connectTimeoutMs ?? CONNECTION_DEFAULTS.connectTimeoutMs,
      0,
    ),
    reconnect: resolveReconnect(input.reconnect ?? {}),
    consumerTimeoutMs: checkInteger(
      'connection.consumerTimeoutMs',
      input.consumerTimeoutMs ?? CONNECTION_DEFAULTS.consumerTimeoutMs,
      300,
    ),
  });
}

/** The broker URLs: a list, or one string of comma-separated URLs; each amqp:// or amqps://. */
function resolveUrls(raw: string | readonly string[]): string[] {
  const urls = (typeof raw === 'string' ? raw.split(',') : raw)
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
  if (urls.length === 0)
    throw new ConfigurationError(
      validationMessage('connection.url', 'must name at least one broker URL', raw),
    );
  for (const [i, url] of urls.entries()) {
    if (!/^amqps?:\/\//.test(url))
      throw new ConfigurationError(
        validationMessage(`connection.url[${i}]`, 'must start with amqp:// or amqps://', redactUrl(url)),
      );
  }
  return urls;
}

function resolveReconnect(reconnect: ReconnectOptions): Readonly<Required<ReconnectOptions>> {
  return Object.freeze({
    initialDelayMs: checkInteger(
      'connection.reconnect.initialDelayMs',
      reconnect.initialDelayMs ?? CONNECTION_DEFAULTS.reconnect.initialDelayMs,
      1,
    ),
    maxDelayMs: checkInteger(
      'connection.reconnect.maxDelayMs',
      reconnect.maxDelayMs ?? CONNECTION_DEFAULTS.reconnect.maxDelayMs,
      1,
    ),
    jitter: checkNumber(
      'connection.reconnect.jitter',
      reconnect.jitter ?? CONNECTION_DEFAULTS.reconnect.jitter,
      0,
      1,
    ),
  });
}

/**
 * A URL fit for logs and error messages: the password replaced, found by taking the URL apart rather
 * than by a pattern of what a good one looks like, so that an unencoded `@` or `/` in the password, an
 * empty user name or a scheme warren refuses never print it. Everything between `scheme://` and the
 * last `@` is user info: the part after its first `:` is masked.
 */
export function redactUrl(url: string): string {
  const schemeEnd = url.indexOf('://');
  const start = schemeEnd < 0 ? 0 : schemeEnd + 3;
  const at = url.lastIndexOf('@');
  if (at < start) return url;
  const userInfo = url.slice(start, at);
  const colon = userInfo.indexOf(':');
  const user = colon < 0 ? userInfo : userInfo.slice(0, colon);
  return `${url.slice(0, start)}${user}:***${url.slice(at)}`;
}

/** `text` (a driver's error message, say) with every password of `urls` replaced. */
export function maskPasswords(text: string, urls: readonly string[]): string {
  let masked = text;
  for (const url of urls) {
    const schemeEnd = url.indexOf('://');
    const start = schemeEnd < 0 ? 0 : schemeEnd + 3;
    const at = url.lastIndexOf('@');
    const colon = url.indexOf(':', start);
    if (at < start || colon < 0 || colon > at) continue;
    const password = url.slice(colon + 1, at);
    if (password.length > 0) masked = masked.split(password).join('***');
  }
  return masked;
}
