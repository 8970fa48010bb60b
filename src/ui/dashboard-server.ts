import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigurationError } from '../index';
import { createDashboard, type DashboardHandler } from './dashboard-handler';
import type { DashboardOptions } from './options';

export interface DashboardServerOptions extends DashboardOptions {
  /** TCP port; 0 picks a free one. Default 3000. */
  readonly port?: number;
  /**
   * Interface to listen on. Default `127.0.0.1` (loopback only). Another interface needs `authorize`:
   * without it the dashboard would answer nobody but loopback clients anyway. Clients must name this
   * address (or a loopback name, or one of `allowedHosts`) in their Host header.
   */
  readonly host?: string;
}

/** A running standalone dashboard. */
export interface DashboardServer {
  /** `http://host:port/` */
  readonly url: string;
  readonly handler: DashboardHandler;
  /** Stops listening and ends the event streams (the ops API stays open: it is yours). */
  close(): Promise<void>;
}

/**
 * Serves the dashboard on its own HTTP server (what `warren ui` runs), on loopback unless told otherwise.
 *
 * @example
 * const server = await startDashboardServer({ ops: createOps(config), port: 3000 });
 * console.log(server.url); // http://127.0.0.1:3000/
 */
export async function startDashboardServer(options: DashboardServerOptions): Promise<DashboardServer> {
  const port = options.port ?? 3000;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigurationError(`dashboard.port must be an integer from 0 to 65535 (got ${port})`);
  const host = options.host ?? '127.0.0.1';
  // Standalone, the Host is always checked: loopback names and the bound address unless told more.
  const handler = createDashboard({ ...options, allowedHosts: options.allowedHosts ?? [] });
  const server: Server = createServer((request, response) => void handler(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/`,
    handler,
    close: async () => {
      handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
