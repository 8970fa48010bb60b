import type { IncomingMessage } from 'node:http';
import type { WarrenOps } from '../ops';
import { startDashboardServer, type Role } from '../ui';
import { CliError } from './cli-error';

const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];

export interface UiValues {
  readonly port?: string | undefined;
  readonly host?: string | undefined;
  readonly role?: string | undefined;
}

function isLoopback(request: IncomingMessage): boolean {
  const address = request.socket.remoteAddress ?? '';
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * `warren ui`: the dashboard on loopback until SIGINT or SIGTERM. Read-only unless `--role` grants
 * loopback clients operator or admin (a conscious choice: anyone on this host gets that role).
 */
export async function runUi(ops: WarrenOps, values: UiValues, stop?: Promise<void>): Promise<string> {
  const port = values.port === undefined ? 3000 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliError(`--port must be a whole number from 0 to 65535 (got ${values.port})`);
  const role = (values.role ?? 'viewer') as Role;
  if (!ROLES.includes(role))
    throw new CliError(`--role must be one of ${ROLES.join(', ')} (got ${values.role})`);
  const server = await startDashboardServer({
    ops,
    port,
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(role !== 'viewer'
      ? {
          authorize: (request: IncomingMessage) => {
            if (!isLoopback(request)) throw new Error('loopback only');
            return { role, user: `${request.socket.remoteAddress} (--role ${role})` };
          },
        }
      : {}),
  });
  process.stdout.write(`warren dashboard: ${server.url} (${role}; Ctrl-C stops it)\n`);
  await (stop ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    }));
  await server.close();
  return 'dashboard stopped';
}
