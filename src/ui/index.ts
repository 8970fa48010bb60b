/**
 * warren/ui: the web dashboard, a face of the operations API (warren/ops). Explicit named exports only.
 */
export { createDashboard, type DashboardHandler } from './dashboard-handler';
export { startDashboardServer, type DashboardServer, type DashboardServerOptions } from './dashboard-server';
export { expressDashboard } from './express-dashboard';
export {
  fastifyDashboard,
  type FastifyReplyLike,
  type FastifyRequestLike,
  type FastifyScope,
} from './fastify-dashboard';
export {
  DASHBOARD_DEFAULTS,
  resolveDashboardOptions,
  type AuditEntry,
  type DashboardAction,
  type DashboardIdentity,
  type DashboardOptions,
  type Role,
} from './options';
export type { DashboardQueue, DashboardSnapshot } from './snapshot-cache';
