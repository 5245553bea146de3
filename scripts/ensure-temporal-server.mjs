#!/usr/bin/env node
// Finds or builds the production Temporal server (`temporal-server`) and its SQL schema tool
// (`temporal-sql-tool`), pinned to the version the dev server embeds. Order of preference:
//   1. $TEMPORAL_SERVER_BIN_DIR (a folder holding both binaries),
//   2. the per-user cache (~/.cache/wholesale/temporal-server-<version>/bin),
//   3. `go install` of the pinned tag into that cache (one time, a few minutes on 2 cores).
// The SQL tool carries the module's schema files (schema/postgresql/v12/{temporal,visibility}/
// versioned) embedded, so nothing else from the module cache is needed at run time.
// Prints the binaries' folder on stdout. When neither is possible it prints a reason on stderr and
// exits 3.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executable, onPath } from './ensure-temporal.mjs';

export const TEMPORAL_SERVER_VERSION = '1.29.1';
const MODULE = 'go.temporal.io/server';


function findGo() {
  return onPath('go') ?? (executable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

export function serverCacheRoot() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'wholesale', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

export function serverBinDir() {
  return join(serverCacheRoot(), 'bin');
}

const BINARIES = ['temporal-server', 'temporal-sql-tool'];

function complete(dir) {
  return !!dir && BINARIES.every((b) => executable(join(dir, b)));
}

export function findTemporalServer() {
  const fromEnv = process.env.TEMPORAL_SERVER_BIN_DIR;
  if (complete(fromEnv)) return fromEnv;
  if (complete(serverBinDir())) return serverBinDir();
  return undefined;
}

/**
 * Returns the folder holding `temporal-server` and `temporal-sql-tool`, or throws with a clear
 * reason. Fast when cached.
 */
export function ensureTemporalServer({ log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  let binDir = findTemporalServer();
  if (binDir) return binDir;
  const go = findGo();
  if (!go) {
    throw new Error('ensure-temporal-server: no temporal-server binaries cached and no Go toolchain (install Go 1.25 or newer, or set TEMPORAL_SERVER_BIN_DIR to a folder holding both binaries)');
  }
  binDir = serverBinDir();
  mkdirSync(binDir, { recursive: true });
  if (!complete(binDir)) {
    log(`ensure-temporal-server: building temporal-server and temporal-sql-tool v${TEMPORAL_SERVER_VERSION} with Go into ${binDir} (one time, a few minutes)`);
    const result = spawnSync(go, [
      'install',
      `${MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
      `${MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
    ], {
      env: { ...process.env, GOBIN: binDir, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (result.status !== 0) {
      throw new Error(`ensure-temporal-server: go install failed (exit ${result.status ?? result.signal})`);
    }
    // go install names binaries after the package folder (server, sql); a rename is atomic, so a
    // concurrent caller never sees half a binary.
    for (const [from, to] of [['server', 'temporal-server'], ['sql', 'temporal-sql-tool']]) {
      const src = join(binDir, from);
      if (existsSync(src)) renameSync(src, join(binDir, to));
    }
    if (!complete(binDir)) throw new Error(`ensure-temporal-server: go install succeeded but ${binDir} lacks ${BINARIES.join(', ')}`);
  }
  return binDir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const binDir = ensureTemporalServer();
    process.stdout.write(`${binDir}\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(3);
  }
}
