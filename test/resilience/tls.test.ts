import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConnectionError, createWarren, defineTopology, Job, type JobHandler, type Warren } from '../../src';
import {
  cleanConfiguredNode,
  configuredNode,
  rabbitCtl,
  startConfiguredNode,
  type PrivateNode,
} from '../support/private-broker';
import { makeTestCertificates, type TestCertificates } from '../support/test-certificates';
import { testNamespace, testProfile } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/** TLS port of the `wtls` node: the one after its AMQP port (5694 on 3.10, 5894 on 4.3). */
const TLS_PORT = configuredNode('wtls').port + 1;

const seen: string[] = [];

@Job('secure.ping', { queue: 'secure' })
class SecurePing implements JobHandler<{ id: string }> {
  async handle(data: { id: string }) {
    seen.push(data.id);
  }
}

/**
 * TLS with a client certificate on a node of the test's own (`wtls`): the CA, the certificate, its
 * encrypted key and its passphrase reach amqplib through `connection.socket`, and the broker logs the
 * client in by its certificate (EXTERNAL), with no password in the URL.
 */
describe('TLS and certificate login', { timeout: 240_000 }, () => {
  let certs: TestCertificates;
  let node: PrivateNode;
  const open: Warren[] = [];

  before(async () => {
    certs = makeTestCertificates();
    node = await startConfiguredNode(
      'wtls',
      [
        `listeners.ssl.default = ${TLS_PORT}`,
        `ssl_options.cacertfile = ${certs.caFile}`,
        `ssl_options.certfile = ${certs.serverCertFile}`,
        `ssl_options.keyfile = ${certs.serverKeyFile}`,
        'ssl_options.verify = verify_peer',
        'ssl_options.fail_if_no_peer_cert = true',
        'ssl_cert_login_from = common_name',
        'auth_mechanisms.1 = EXTERNAL',
        'auth_mechanisms.2 = PLAIN',
        '',
      ].join('\n'),
      ['rabbitmq_auth_mechanism_ssl'],
    );
    await rabbitCtl(node.name, 'add_user', certs.clientName, 'not-used-by-external-login');
    await rabbitCtl(node.name, 'set_permissions', '-p', '/', certs.clientName, '.*', '.*', '.*');
  });

  after(async () => {
    for (const warren of open.splice(0)) await warren.close({ graceMs: 500 }).catch(() => undefined);
    await cleanConfiguredNode('wtls');
    certs?.remove();
  });

  const tlsOptions = (withCa: boolean) => {
    const namespace = testNamespace('tls');
    return {
      ...testProfile(namespace),
      url: `amqps://localhost:${TLS_PORT}`,
      topology: defineTopology({ queues: { secure: {} } }),
      handlers: [new SecurePing()],
      connection: {
        connectTimeoutMs: 3_000,
        auth: 'external' as const,
        socket: {
          ...(withCa ? { ca: certs.ca } : {}),
          cert: certs.clientCert,
          key: certs.clientKey,
          passphrase: certs.passphrase,
          servername: 'localhost',
        },
      },
    };
  };

  it('connects with the CA and a client certificate, logs in by the certificate and runs a job', async () => {
    const warren = await createWarren(tlsOptions(true));
    open.push(warren);
    await warren.start();
    await warren.publish('secure.ping', { id: 'over-tls' });
    await waitFor(() => seen.includes('over-tls'), { what: 'the job sent over TLS to run' });
    assert.ok(warren.health().connected);
  });

  it("fails to connect when the broker's CA is not given (the system CAs do not know it)", async () => {
    await assert.rejects(
      createWarren(tlsOptions(false)),
      (error: unknown) => error instanceof ConnectionError && error.code === 'CONNECTION_FAILED',
    );
  });
});
