/**
 * A second RabbitMQ user on the broker under test, for tests that play another publisher: its messages
 * carry its own `user_id`, which warren's connection (guest) may not set. Each test makes its own
 * uniquely named user through the broker's management HTTP API (`MANAGEMENT_URL`, as guest) and deletes it
 * afterwards. Not with rabbitmqctl: each call of it starts an Erlang VM that takes a core for about a
 * second, which made every file that creates users run alone (scripts/test-tiers.mjs).
 */
import { randomBytes } from 'node:crypto';
import { BROKER_URL, MANAGEMENT_URL } from './broker-under-test';

export interface BrokerUser {
  readonly name: string;
  readonly password: string;
  /** BROKER_URL with this user's credentials. */
  readonly url: string;
}

/** One call of the management API as the broker URL's user (guest); a status other than 2xx throws. */
async function management(method: 'PUT' | 'DELETE', path: string, body?: object): Promise<void> {
  const broker = new URL(BROKER_URL);
  const user = decodeURIComponent(broker.username || 'guest');
  const password = decodeURIComponent(broker.password || 'guest');
  const response = await fetch(new URL(path, MANAGEMENT_URL), {
    method,
    headers: {
      authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
}

/** A user's permissions on the default vhost: RabbitMQ's configure, write and read regular expressions. */
export interface BrokerPermissions {
  readonly configure: string;
  readonly write: string;
  readonly read: string;
}

/** Every permission: what the tests of a foreign publisher use. */
export const FULL_PERMISSIONS: BrokerPermissions = { configure: '.*', write: '.*', read: '.*' };

/**
 * Write on the default exchange only, nothing else (`set_permissions -p / USER '' '^amq\.default$' ''`):
 * RabbitMQ checks that permission, never the queue a default-exchange publish lands in, so this user can
 * append to every stream of every namespace on the vhost.
 */
export const DEFAULT_EXCHANGE_ONLY: BrokerPermissions = { configure: '', write: '^amq\\.default$', read: '' };

/** Write on these exchanges only (a jobs exchange, the control exchange): a user that may publish jobs. */
export function writeOnly(...exchanges: readonly string[]): BrokerPermissions {
  const names = exchanges.map((e) => e.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  return { configure: '', write: `^(${names})$`, read: '' };
}

/**
 * Creates a user on the default vhost, with full permissions unless told otherwise, and the given user
 * tags (`management`, `monitoring`: what the management HTTP API lets it read).
 */
export async function createBrokerUser(
  label = 'other',
  permissions: BrokerPermissions = FULL_PERMISSIONS,
  tags: readonly string[] = [],
): Promise<BrokerUser> {
  const name = `warren-test-${label}-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  const user = `/api/users/${encodeURIComponent(name)}`;
  await management('PUT', user, { password, tags: tags.join(',') });
  const { configure, write, read } = permissions;
  await management('PUT', `/api/permissions/%2F/${encodeURIComponent(name)}`, { configure, write, read });
  const url = new URL(BROKER_URL);
  url.username = name;
  url.password = password;
  return { name, password, url: url.toString() };
}

/** Deletes the user (its connections are closed by the broker). Never throws. */
export async function deleteBrokerUser(user: BrokerUser | undefined): Promise<void> {
  if (!user) return;
  await management('DELETE', `/api/users/${encodeURIComponent(user.name)}`).catch((error: Error) =>
    console.warn(`broker-user: deleting ${user.name} failed (ignored): ${error.message}`),
  );
}
