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
   * Decides the role of a request (a cookie, a header your proxy sets after login, ...). Without it every
   * request is a viewer and only loopback clients are answered. Return `{ role, user }` to name the user
   * in the audit log. Throwing answers 403.
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
}

export const DASHBOARD_DEFAULTS = Object.freeze({
  refreshMs: 1000,
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
  return Object.freeze({
    ops: input.ops,
    authorize: input.authorize,
    permissions: Object.freeze(permissions),
    refreshMs,
    audit: input.audit ?? writeAudit,
  });
}

/** Whether a role may do an action under these permissions. */
export function isAllowed(
  permissions: Readonly<Record<DashboardAction, Role>>,
  role: Role,
  action: DashboardAction,
) {
  return ROLES.indexOf(role) >= ROLES.indexOf(permissions[action]);
}
