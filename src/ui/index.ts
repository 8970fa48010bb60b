/**
 * warren/ui: the web dashboard, a face of the operations API (warren/ops). Explicit named exports only.
 */
export { createDashboard, type DashboardHandler } from './dashboard-handler';
export { startDashboardServer, type DashboardServer, type DashboardServerOptions } from './dashboard-server';
export { expressDashboard } from './express-dashboard';
export { fastifyDashboard } from './fastify-dashboard';
export type {
  AuditEntry,
  DashboardAction,
  DashboardIdentity,
  DashboardOptions,
  Role,
} from './options';
