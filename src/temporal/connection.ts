// How this service reaches Temporal: the address, and from the config TLS (a private CA, an mTLS
// client pair, the name on the server's certificate) or Temporal Cloud's API key. The client, the
// worker, the CLI and the reconciler's schedule all connect with what is built here, so no part of
// the service talks to Temporal in plaintext where another would not.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { TLSConfig } from '@temporalio/client';
/**
 * The settings a connection is made from, as src/config.ts parses them. Declared here rather than
 * picked from Config: the config's validation asks this module for its problems, and a module the
 * config imports must not import the config back.
 */
export interface TemporalSettings {
  NODE_ENV?: string;
  TEMPORAL_ADDRESS?: string;
  TEMPORAL_PORT: number;
  TEMPORAL_TLS: boolean;
  TEMPORAL_TLS_CA?: string;
  TEMPORAL_TLS_CERT?: string;
  TEMPORAL_TLS_KEY?: string;
  TEMPORAL_TLS_SERVER_NAME?: string;
  TEMPORAL_API_KEY?: string;
  TEMPORAL_ALLOW_PLAINTEXT: boolean;
}

/** What `Connection.connect` (client) and `NativeConnection.connect` (worker) both take. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig;
  /** Sent as `Authorization: Bearer …`; a secret, never logged. */
  apiKey?: string;
}

/** The frontend this config names: TEMPORAL_ADDRESS, else `npm start`'s on 127.0.0.1. */
export function temporalAddressOf(c: Pick<TemporalSettings, 'TEMPORAL_ADDRESS' | 'TEMPORAL_PORT'>): string {
  return c.TEMPORAL_ADDRESS ?? `127.0.0.1:${c.TEMPORAL_PORT}`;
}

/** TLS is on when any TLS setting or an API key is given (Temporal Cloud takes its key over TLS only). */
export function usesTls(c: TemporalSettings): boolean {
  return (
    c.TEMPORAL_TLS ||
    !!(
      c.TEMPORAL_TLS_CA ||
      c.TEMPORAL_TLS_CERT ||
      c.TEMPORAL_TLS_KEY ||
      c.TEMPORAL_TLS_SERVER_NAME ||
      c.TEMPORAL_API_KEY
    )
  );
}

/** `host:port`, `[v6]:port` or a bare host: is it this machine (127.0.0.0/8, ::1, localhost)? */
export function isLoopbackAddress(address: string): boolean {
  const host =
    isIP(address) === 6
      ? address
      : address.startsWith('[')
        ? address.slice(1, address.indexOf(']'))
        : address.replace(/:\d*$/, '');
  const name = host.toLowerCase();
  if (name === 'localhost') return true;
  if (isIP(name) === 4) return name.split('.')[0] === '127';
  // The URL parser writes an IPv6 address in its one short form.
  return isIP(name) === 6 && new URL(`http://[${name}]`).hostname === '[::1]';
}

type PemRead = { ok: true; pem: Buffer } | { ok: false; problem: string };

/** A PEM file's bytes, or why it cannot serve: the problem names the variable, never what the file holds. */
function readPem(variable: string, path: string, kind: 'CERTIFICATE' | 'PRIVATE KEY'): PemRead {
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    return { ok: false, problem: `  ${variable}: cannot read the file it names (${code})` };
  }
  const text = pem.toString('latin1');
  const found =
    kind === 'CERTIFICATE' ? /-----BEGIN CERTIFICATE-----/.test(text) : /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text);
  if (!found) return { ok: false, problem: `  ${variable}: the file it names holds no PEM ${kind.toLowerCase()}` };
  return { ok: true, pem };
}

/**
 * The connection TLS settings, read from their files now (a renewed certificate is taken at the
 * next connect), with every problem as a config line naming its variable.
 */
function readTls(c: TemporalSettings): { tls?: TLSConfig; problems: string[] } {
  const problems: string[] = [];
  if (!!c.TEMPORAL_TLS_CERT !== !!c.TEMPORAL_TLS_KEY) {
    const missing = c.TEMPORAL_TLS_CERT ? 'TEMPORAL_TLS_KEY' : 'TEMPORAL_TLS_CERT';
    const given = c.TEMPORAL_TLS_CERT ? 'TEMPORAL_TLS_CERT' : 'TEMPORAL_TLS_KEY';
    problems.push(`  ${missing}: required with ${given} (the client certificate and its key, PEM files, for mTLS)`);
  }
  if (!usesTls(c)) return { problems };
  const tls: TLSConfig = {};
  if (c.TEMPORAL_TLS_SERVER_NAME) tls.serverNameOverride = c.TEMPORAL_TLS_SERVER_NAME;
  if (c.TEMPORAL_TLS_CA) {
    const ca = readPem('TEMPORAL_TLS_CA', c.TEMPORAL_TLS_CA, 'CERTIFICATE');
    if (ca.ok) tls.serverRootCACertificate = ca.pem;
    else problems.push(ca.problem);
  }
  if (c.TEMPORAL_TLS_CERT && c.TEMPORAL_TLS_KEY) {
    const crt = readPem('TEMPORAL_TLS_CERT', c.TEMPORAL_TLS_CERT, 'CERTIFICATE');
    const key = readPem('TEMPORAL_TLS_KEY', c.TEMPORAL_TLS_KEY, 'PRIVATE KEY');
    if (crt.ok && key.ok) tls.clientCertPair = { crt: crt.pem, key: key.pem };
    for (const read of [crt, key]) if (!read.ok) problems.push(read.problem);
  }
  return { tls, problems };
}

/**
 * What is wrong with how this config reaches Temporal, as config lines: an unpaired or unreadable
 * certificate file; in production, plaintext to a frontend off this machine, which would let
 * anyone on the path read and forge what the service and Temporal say to each other.
 */
export function temporalConnectionProblems(c: TemporalSettings): string[] {
  const { problems } = readTls(c);
  if (
    c.NODE_ENV === 'production' &&
    !usesTls(c) &&
    !c.TEMPORAL_ALLOW_PLAINTEXT &&
    !isLoopbackAddress(temporalAddressOf(c))
  ) {
    problems.push(
      '  TEMPORAL_ADDRESS: plaintext to a Temporal frontend off this machine is refused in production; set TEMPORAL_TLS_CA' +
        ' (and TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY for mTLS), TEMPORAL_API_KEY or TEMPORAL_TLS=true, or TEMPORAL_ALLOW_PLAINTEXT=true' +
        ' where the network between them is private',
    );
  }
  return problems;
}

/** The options every connection to Temporal is made with (`address` overrides the config's, e.g. `npm start`'s own server). */
export function temporalConnectionOptions(
  c: TemporalSettings,
  address = temporalAddressOf(c),
): TemporalConnectionOptions {
  const { tls, problems } = readTls(c);
  if (problems.length > 0) throw new Error(`Invalid configuration:\n${problems.join('\n')}`);
  return { address, ...(tls ? { tls } : {}), ...(c.TEMPORAL_API_KEY ? { apiKey: c.TEMPORAL_API_KEY } : {}) };
}
