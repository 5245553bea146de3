#!/usr/bin/env node
// Finds or builds the `temporal` CLI (which embeds the dev server and its Web UI) without the
// SDK's download host, which these machines cannot reach. Order of preference:
//   1. $TEMPORAL_CLI_PATH, 2. `temporal` on PATH, 3. the project tools folder (.tools/bin),
//   4. the per-user cache (~/.cache/wholesale/temporal-cli-<version>/bin),
//   5. `go install` of the pinned tag into that cache.
// Prints the path on stdout. When none of these works it prints nothing and exits 3, and the
// caller falls back to the SDK's own download (TestWorkflowEnvironment.createLocal).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TEMPORAL_CLI_VERSION = '1.5.1';
const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && executable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

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

export function ensureTemporal({ log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  const found = findTemporal();
  if (found) return found;
  const go = onPath('go') ?? (executable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    log('ensure-temporal: no temporal CLI and no Go toolchain; the SDK download will be tried');
    return undefined;
  }
  const bin = cacheDir();
  mkdirSync(bin, { recursive: true });
  log(`ensure-temporal: building temporal CLI v${TEMPORAL_CLI_VERSION} with Go into ${bin} (one time, a few minutes)`);
  const result = spawnSync(go, ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`], {
    env: { ...process.env, GOBIN: bin, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const built = join(bin, 'temporal');
  if (result.status !== 0 || !existsSync(built)) {
    log('ensure-temporal: go install failed; the SDK download will be tried');
    return undefined;
  }
  try {
    execFileSync(built, ['--version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return built;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const path = ensureTemporal();
  if (!path) process.exit(3);
  process.stdout.write(`${path}\n`);
}
