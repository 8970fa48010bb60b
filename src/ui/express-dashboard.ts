import type { IncomingMessage, ServerResponse } from 'node:http';
import { createDashboard } from './dashboard-handler';
import type { DashboardOptions } from './options';

/**
 * The dashboard as Express (4 or 5) middleware: `app.use('/warren', expressDashboard({ ops, authorize }))`.
 * Express is not imported: the middleware is the plain handler, which reads `req.originalUrl` so that
 * its relative links work under the mount path, and calls `next` for paths it does not serve.
 */
export function expressDashboard(options: DashboardOptions) {
  const handler = createDashboard(options);
  const middleware = (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) =>
    void handler(request, response, next);
  return Object.assign(middleware, { close: () => handler.close(), snapshots: handler.snapshots });
}
