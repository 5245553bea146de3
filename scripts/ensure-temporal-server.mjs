#!/usr/bin/env node
// Finds or builds the production Temporal server (`temporal-server`) and its SQL schema tool
// (`temporal-sql-tool`), pinned to the version the dev server embeds. Order of preference:
//   1. $TEMPORAL_SERVER_BIN_DIR (a folder holding both binaries),
//   2. both on PATH, side by side (prebuilt binaries of the pinned version),
//   3. the per-user cache (~/.cache/wholesale/temporal-server-<version>/bin),
//   4. `go install` of the pinned tag into that cache (once per machine, minutes: progress on stderr).
// The SQL tool carries the module's schema files (schema/postgresql/v12/{temporal,visibility}/
// versioned) embedded, so nothing else from the module cache is needed at run time.
// Prints the binaries' folder on stdout. When neither is possible it prints a reason on stderr and
// exits 3.
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executable, findGo, goInstall, onPath } from './go-install.mjs';

export const TEMPORAL_SERVER_VERSION = '1.29.1';
const MODULE = 'go.temporal.io/server';

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
  const onPathDir = onPath('temporal-server') && dirname(onPath('temporal-server'));
  return [process.env.TEMPORAL_SERVER_BIN_DIR, onPathDir, serverBinDir()].find(complete);
}

/**
 * Returns the folder holding `temporal-server` and `temporal-sql-tool`, or throws with a clear
 * reason. Fast when found.
 */
export async function ensureTemporalServer({ log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  const found = findTemporalServer();
  if (found) return found;
  const go = findGo();
  if (!go) {
    throw new Error(
      'ensure-temporal-server: no temporal-server binaries cached and no Go toolchain (install Go 1.25 or newer, or set TEMPORAL_SERVER_BIN_DIR to a folder holding both binaries)',
    );
  }
  const binDir = serverBinDir();
  mkdirSync(binDir, { recursive: true });
  try {
    await goInstall({
      go,
      packages: [
        `${MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
        `${MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
      ],
      gobin: binDir,
      what: `Temporal server v${TEMPORAL_SERVER_VERSION} (temporal-server, temporal-sql-tool)`,
      why: 'not on PATH or in the cache: ',
      usually: 'about 4 minutes',
      log,
    });
  } catch (err) {
    throw new Error(`ensure-temporal-server: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  // go install names binaries after the package folder (server, sql); a rename is atomic, so a
  // concurrent caller never sees half a binary.
  for (const [from, to] of [
    ['server', 'temporal-server'],
    ['sql', 'temporal-sql-tool'],
  ]) {
    const src = join(binDir, from);
    if (existsSync(src)) renameSync(src, join(binDir, to));
  }
  if (!complete(binDir))
    throw new Error(`ensure-temporal-server: go install succeeded but ${binDir} lacks ${BINARIES.join(', ')}`);
  return binDir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const binDir = await ensureTemporalServer();
    process.stdout.write(`${binDir}\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(3);
  }
}
