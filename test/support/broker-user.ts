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

/**
 * Creates a user with full permissions on the default vhost, and the given user tags (`management`,
 * `monitoring`: what the management HTTP API lets it read).
 */
export async function createBrokerUser(label = 'other', tags: readonly string[] = []): Promise<BrokerUser> {
  const name = `warren-test-${label}-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await rabbitmqctl('add_user', name, password);
  await rabbitmqctl('set_permissions', '-p', '/', name, '.*', '.*', '.*');
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
