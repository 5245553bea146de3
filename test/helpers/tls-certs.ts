import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// Certificates for tests that run Temporal over TLS, made at run time by the `openssl` command
// (OpenSSL 3: `req -x509 -CA` signs in one step). P-256 keys in PKCS#8, which Go (the server),
// rustls (the worker's core), grpc-js (the client) and the `temporal` CLI all read.
const run = promisify(execFile);

/** Where `openssl` is, or undefined when the machine has none (the tests that need it say so and skip). */
export function opensslPath(): string | undefined {
  const found = spawnSync('openssl', ['version'], { encoding: 'utf8' });
  return found.status === 0 ? 'openssl' : undefined;
}

export interface CertFiles {
  cert: string;
  key: string;
}

export interface TestPki {
  dir: string;
  ca: CertFiles;
  /** The frontend's: names 127.0.0.1 and localhost, for server and client use (the server's own system worker presents it). */
  server: CertFiles;
  /** This service's client certificate, signed by the CA. */
  client: CertFiles;
  /** A client certificate from another CA, which the server must not accept. */
  stranger: CertFiles;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2'];

async function makeCa(dir: string, name: string): Promise<CertFiles> {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  await run('openssl', [
    'req',
    '-x509',
    ...EC,
    '-keyout',
    files.key,
    '-out',
    files.cert,
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return files;
}

async function issue(dir: string, ca: CertFiles, name: string, extensions: string[]): Promise<CertFiles> {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  await run('openssl', [
    'req',
    '-x509',
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    ...EC,
    '-keyout',
    files.key,
    '-out',
    files.cert,
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    ...extensions.flatMap((e) => ['-addext', e]),
  ]);
  return files;
}

/** A CA, a server certificate for 127.0.0.1/localhost, a client certificate, and a stranger's, in a fresh temp dir. */
export async function makeTestPki(): Promise<TestPki> {
  const dir = mkdtempSync(join(tmpdir(), 'temporal-tls-'));
  const ca = await makeCa(dir, 'wholesale-test-ca');
  const otherCa = await makeCa(dir, 'other-ca');
  const [server, client, stranger] = await Promise.all([
    issue(dir, ca, 'localhost', [
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      'extendedKeyUsage=serverAuth,clientAuth',
    ]),
    issue(dir, ca, 'wholesale-service', ['extendedKeyUsage=clientAuth']),
    issue(dir, otherCa, 'stranger', ['extendedKeyUsage=clientAuth']),
  ]);
  return { dir, ca, server, client, stranger };
}
