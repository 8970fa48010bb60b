/**
 * Throwaway TLS certificates for tests, made with openssl in a temp dir: a CA, a server certificate
 * for `localhost` / 127.0.0.1 and a client certificate (its key encrypted with a passphrase). EC keys:
 * fast to make. The directory is readable by the rabbitmq user, which runs the private nodes.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface TestCertificates {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly ca: Buffer;
  readonly clientCert: Buffer;
  readonly clientKey: Buffer;
  readonly passphrase: string;
  /** The client certificate's common name: the user an EXTERNAL login becomes. */
  readonly clientName: string;
  remove(): void;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];

export function makeTestCertificates(clientName = 'warren-client'): TestCertificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'warren-certs-'));
  fs.chmodSync(dir, 0o755);
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const passphrase = 'test-passphrase';
  openssl(
    'req',
    '-x509',
    ...EC,
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=warren-test-ca',
  );
  fs.writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl('req', ...EC, '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  );
  openssl(
    'req',
    ...EC,
    '-keyout',
    'client.key',
    '-passout',
    `pass:${passphrase}`,
    '-out',
    'client.csr',
    '-subj',
    `/CN=${clientName}`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'client.pem',
    '-days',
    '2',
  );
  for (const name of fs.readdirSync(dir)) fs.chmodSync(file(name), 0o644);
  return {
    dir,
    caFile: file('ca.pem'),
    serverCertFile: file('server.pem'),
    serverKeyFile: file('server.key'),
    ca: fs.readFileSync(file('ca.pem')),
    clientCert: fs.readFileSync(file('client.pem')),
    clientKey: fs.readFileSync(file('client.key')),
    passphrase,
    clientName,
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
