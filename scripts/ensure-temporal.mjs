#!/usr/bin/env node
// Finds or builds the `temporal` CLI (which embeds the dev server and its Web UI) without the
// SDK's download host, which these machines cannot reach. Order of preference:
//   1. $TEMPORAL_CLI_PATH, 2. `temporal` on PATH, 3. the project tools folder (.tools/bin),
//   4. the per-user cache (~/.cache/wholesale/temporal-cli-<version>/bin),
//   5. `go install` of the pinned tag into that cache (once per machine, minutes: progress on stderr).
// Prints the path on stdout. When none of these works it prints nothing and exits 3, and the
// caller falls back to the SDK's own download (TestWorkflowEnvironment.createLocal).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executable, findGo, goInstall, onPath } from './go-install.mjs';

export const TEMPORAL_CLI_VERSION = '1.5.1';
const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'wholesale', `temporal-cli-${TEMPORAL_CLI_VERSION}`, 'bin');
}

export function findTemporal() {
  const candidates = [
    process.env.TEMPORAL_CLI_PATH,
    onPath('temporal'),
    join(projectRoot, '.tools', 'bin', 'temporal'),
    join(cacheDir(), 'temporal'),
  ];
  return candidates.find((p) => p && executable(p));
}

export async function ensureTemporal({ log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  const found = findTemporal();
  if (found) return found;
  const go = findGo();
  if (!go) {
    log('ensure-temporal: no temporal CLI and no Go toolchain; the SDK download will be tried');
    return undefined;
  }
  const bin = cacheDir();
  mkdirSync(bin, { recursive: true });
  try {
    await goInstall({
      go,
      packages: [`github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`],
      gobin: bin,
      what: `Temporal CLI v${TEMPORAL_CLI_VERSION} (the dev server)`,
      why: 'no `temporal` on PATH or in the cache: ',
      usually: 'about 7 minutes',
      log,
    });
  } catch (err) {
    log(
      `ensure-temporal: ${err instanceof Error ? err.message : String(err)}\nensure-temporal: the SDK download will be tried`,
    );
    return undefined;
  }
  const built = join(bin, 'temporal');
  if (!existsSync(built)) return undefined;
  try {
    execFileSync(built, ['--version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return built;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const path = await ensureTemporal();
  if (!path) process.exit(3);
  process.stdout.write(`${path}\n`);
}
