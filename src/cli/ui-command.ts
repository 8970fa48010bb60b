import type { WarrenOps } from '../ops';
import { startDashboardServer, type Role } from '../ui';
import { CliError } from './cli-error';

const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];

export interface UiValues {
  readonly port?: string | undefined;
  readonly host?: string | undefined;
  readonly role?: string | undefined;
  readonly 'allowed-host'?: string[] | undefined;
}

/**
 * `warren ui`: the dashboard on loopback until SIGINT or SIGTERM. Read-only unless `--role` grants
 * direct loopback clients operator or admin (a conscious choice: anyone on this host gets that role, and
 * the page says so). A proxied request is refused, and so is a Host that is not this dashboard's
 * (`--allowed-host` adds names): the dashboard's own guard, not a check of its own here.
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
    loopbackRole: role,
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(values['allowed-host'] !== undefined ? { allowedHosts: values['allowed-host'] } : {}),
  });
  const warning = role === 'viewer' ? '' : `; every user and process on this machine is ${role}`;
  process.stdout.write(`warren dashboard: ${server.url} (${role}${warning}; Ctrl-C stops it)\n`);
  await (stop ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    }));
  await server.close();
  return 'dashboard stopped';
}
