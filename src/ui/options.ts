import type { IncomingMessage } from 'node:http';
import { ConfigurationError } from '../index';
import type { WarrenOps } from '../ops';

/** Who may do what: a viewer reads, an operator also replays and pauses, an admin also purges and publishes. */
export type Role = 'viewer' | 'operator' | 'admin';

/** What the dashboard can change, each through the operations API. */
export type DashboardAction = 'replay' | 'pause' | 'resume' | 'purge' | 'publish';

/** What `authorize` returns: a role, optionally with the user's name for the audit log. */
export interface DashboardIdentity {
  readonly role: Role;
  readonly user?: string;
}

/** One action, as the audit log records it. */
export interface AuditEntry {
  readonly at: string;
  /** The user `authorize` named, else the client's socket address (never an X-Forwarded-* header). */
  readonly who: string;
  readonly role: Role;
  readonly action: DashboardAction;
  /** The action's arguments (queue, filter, job name): what it was done to. */
  readonly target: unknown;
  readonly outcome: 'done' | 'dry-run' | 'refused' | 'failed';
  readonly detail?: string;
}

export interface DashboardOptions {
  /** The operations API the dashboard is a face of (it can do nothing this cannot). */
  readonly ops: WarrenOps;
  /**
   * Decides the role of a request (a cookie, a header your proxy sets after login, ...). Without it only
   * direct loopback clients are answered, as `loopbackRole`, and a request that came through a proxy
   * (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `Via`) is refused: behind a proxy every client looks local.
   * Return `{ role, user }` to name the user in the audit log. Throwing answers 403. Base it on who the
   * user is (a session), not on where the request comes from: a page that rebinds its DNS name to your
   * address sends requests from there too (give `allowedHosts` for that).
   */
  readonly authorize?: (
    request: IncomingMessage,
  ) => Role | DashboardIdentity | Promise<Role | DashboardIdentity>;
  /** The least role each action needs. Default: replay, pause, resume: operator; purge, publish: admin. */
  readonly permissions?: Partial<Record<DashboardAction, Role>>;
  /**
   * How often the shared snapshot (queues, processes, schedules) is refreshed while anyone looks, ms.
   * One snapshot per dashboard serves every browser. Default 1000; at least 1000.
   */
  readonly refreshMs?: number;
  /** Receives every action with who did it. Default: one JSON line on stderr. */
  readonly audit?: (entry: AuditEntry) => void;
  /**
   * The role of direct loopback clients when there is no `authorize`. Default 'viewer'. Anything more
   * makes every user and every process on this machine that role, and the page says so on every view
   * (what `warren ui --role operator` does). Cannot be given with `authorize`.
   */
  readonly loopbackRole?: Role;
  /**
   * The `Host` names the dashboard answers to, besides loopback names (`localhost`, `127.0.0.1`, `[::1]`)
   * and the address the connection came in on, each with the port it came in on. An entry without a port
   * (`warren.example.com`) matches any port; with one (`warren.example.com:8443`) only that port.
   * `X-Forwarded-Host` and `Forwarded: host=`, when present, must pass too. Any other Host is refused
   * (421) before anything else: a web page whose DNS name rebinds to this address reaches the dashboard
   * under its own name, and this is how it is told apart. The standalone server always checks. Mounted
   * in your app (createDashboard, expressDashboard, fastifyDashboard, Nest), the check runs when
   * `allowedHosts` is given or `authorize` is not; with `authorize` and no `allowedHosts` your app owns the
   * Host (your session cookie is the guard). Default: none besides the loopback names.
   */
  readonly allowedHosts?: readonly string[];
  /** Open event streams (the live overview) one client may hold; one more is refused with 429. Default 16. */
  readonly maxStreamsPerClient?: number;
  /** Open event streams in all; one more is refused with 503. Each costs about 40 kB. Default 256. */
  readonly maxStreams?: number;
}

export const DASHBOARD_DEFAULTS = Object.freeze({
  refreshMs: 1000,
  loopbackRole: 'viewer' as Role,
  maxStreamsPerClient: 16,
  maxStreams: 256,
  permissions: Object.freeze({
    replay: 'operator',
    pause: 'operator',
    resume: 'operator',
    purge: 'admin',
    publish: 'admin',
  } satisfies Record<DashboardAction, Role>),
});

export const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];

export interface ResolvedDashboardOptions {
  readonly ops: WarrenOps;
  readonly authorize: DashboardOptions['authorize'];
  readonly permissions: Readonly<Record<DashboardAction, Role>>;
  readonly refreshMs: number;
  readonly audit: (entry: AuditEntry) => void;
  readonly loopbackRole: Role;
  /** Lower-case host names, `name` (any port) or `name:port`; undefined: the Host is not checked. */
  readonly allowedHosts: readonly string[] | undefined;
  readonly maxStreamsPerClient: number;
  readonly maxStreams: number;
}

function writeAudit(entry: AuditEntry): void {
  process.stderr.write(`${JSON.stringify({ warrenDashboard: entry })}\n`);
}

export function resolveDashboardOptions(input: DashboardOptions): ResolvedDashboardOptions {
  if (input?.ops === undefined || typeof input.ops.queues !== 'function')
    throw new ConfigurationError('dashboard.ops must be the operations API (createOps) (got none)');
  const refreshMs = input.refreshMs ?? DASHBOARD_DEFAULTS.refreshMs;
  if (!Number.isInteger(refreshMs) || refreshMs < 1000)
    throw new ConfigurationError(`dashboard.refreshMs must be an integer >= 1000 (got ${refreshMs})`);
  if (input.authorize !== undefined && typeof input.authorize !== 'function')
    throw new ConfigurationError(`dashboard.authorize must be a function (got ${typeof input.authorize})`);
  const permissions = { ...DASHBOARD_DEFAULTS.permissions, ...input.permissions };
  for (const [action, role] of Object.entries(permissions)) {
    if (!(action in DASHBOARD_DEFAULTS.permissions))
      throw new ConfigurationError(`dashboard.permissions.${action} is not an action (got ${action})`);
    if (!ROLES.includes(role))
      throw new ConfigurationError(
        `dashboard.permissions.${action} must be one of ${ROLES.join(', ')} (got ${String(role)})`,
      );
  }
  const loopbackRole = input.loopbackRole ?? DASHBOARD_DEFAULTS.loopbackRole;
  if (!ROLES.includes(loopbackRole))
    throw new ConfigurationError(
      `dashboard.loopbackRole must be one of ${ROLES.join(', ')} (got ${String(loopbackRole)})`,
    );
  if (input.loopbackRole !== undefined && input.authorize !== undefined)
    throw new ConfigurationError(
      `dashboard.loopbackRole must not be given with authorize: authorize decides every role (got ${loopbackRole})`,
    );
  const maxStreamsPerClient = streamCap('maxStreamsPerClient', input.maxStreamsPerClient);
  const maxStreams = streamCap('maxStreams', input.maxStreams);
  return Object.freeze({
    ops: input.ops,
    authorize: input.authorize,
    permissions: Object.freeze(permissions),
    refreshMs,
    audit: input.audit ?? writeAudit,
    loopbackRole,
    allowedHosts: resolveAllowedHosts(input.allowedHosts, input.authorize === undefined),
    maxStreamsPerClient,
    maxStreams,
  });
}

function streamCap(name: 'maxStreams' | 'maxStreamsPerClient', value: number | undefined): number {
  const cap = value ?? DASHBOARD_DEFAULTS[name];
  if (!Number.isInteger(cap) || cap < 1)
    throw new ConfigurationError(`dashboard.${name} must be an integer >= 1 (got ${cap})`);
  return cap;
}

const HOST_ENTRY = /^(\[[0-9a-f:.]+\]|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?)(:\d{1,5})?$/;

/** Checked when given, and always without authorize (then only loopback clients are answered anyway). */
function resolveAllowedHosts(
  input: readonly string[] | undefined,
  isLoopbackOnly: boolean,
): readonly string[] | undefined {
  if (input === undefined) return isLoopbackOnly ? Object.freeze([]) : undefined;
  if (!Array.isArray(input))
    throw new ConfigurationError(`dashboard.allowedHosts must be a list of host names (got ${typeof input})`);
  return Object.freeze(
    input.map((entry, i) => {
      const host = typeof entry === 'string' ? entry.trim().toLowerCase() : '';
      if (!HOST_ENTRY.test(host))
        throw new ConfigurationError(
          `dashboard.allowedHosts[${i}] must be a host name or name:port, without a scheme or path (got ${JSON.stringify(entry)})`,
        );
      return host;
    }),
  );
}

/** Whether a role may do an action under these permissions. */
export function isAllowed(
  permissions: Readonly<Record<DashboardAction, Role>>,
  role: Role,
  action: DashboardAction,
) {
  return ROLES.indexOf(role) >= ROLES.indexOf(permissions[action]);
}
