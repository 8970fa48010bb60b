/**
 * A second RabbitMQ user on the broker under test, for tests that play another publisher: its messages
 * carry its own `user_id`, which warren's connection (guest) may not set. Each test makes its own
 * uniquely named user with the broker's rabbitmqctl (`broker-under-test.ts`; `WARREN_TEST_RABBITMQCTL`
 * replaces the command, e.g. `docker compose exec -T rabbitmq rabbitmqctl` for the broker of
 * docker-compose.yml) and deletes it afterwards.
 */
import { randomBytes } from 'node:crypto';
import { BROKER_URL, rabbitmqctl as brokerCtl } from './broker-under-test';

export interface BrokerUser {
  readonly name: string;
  readonly password: string;
  /** BROKER_URL with this user's credentials. */
  readonly url: string;
}

async function rabbitmqctl(...args: string[]): Promise<void> {
  await brokerCtl('-q', ...args);
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
  await rabbitmqctl('add_user', name, password);
  const { configure, write, read } = permissions;
  await rabbitmqctl('set_permissions', '-p', '/', name, configure, write, read);
  if (tags.length > 0) await rabbitmqctl('set_user_tags', name, ...tags);
  const url = new URL(BROKER_URL);
  url.username = name;
  url.password = password;
  return { name, password, url: url.toString() };
}

/** Deletes the user (its connections are closed by the broker). Never throws. */
export async function deleteBrokerUser(user: BrokerUser | undefined): Promise<void> {
  if (!user) return;
  await rabbitmqctl('delete_user', user.name).catch((error: Error) =>
    console.warn(`broker-user: deleting ${user.name} failed (ignored): ${error.message}`),
  );
}
