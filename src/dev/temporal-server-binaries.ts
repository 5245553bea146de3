// The production Temporal server's binaries, `temporal-server` and `temporal-sql-tool`, found or
// built once by scripts/ensure-temporal-server.mjs (the one place that knows the version and cache).
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const projectRoot = resolve(__dirname, '..', '..');

/**
 * Builds (one time, a few minutes) or finds `temporal-server` and `temporal-sql-tool`; resolves to
 * their folder, or rejects with the reason. For a test's beforeAll (give it a long timeout).
 */
export function ensureTemporalServerBinaries(): Promise<string> {
  return new Promise((resolvePath, reject) => {
    const child = spawn(process.execPath, [resolve(projectRoot, 'scripts', 'ensure-temporal-server.mjs')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => {
      err = (err + String(d)).slice(-4000);
      if (process.env.TEMPORAL_SERVER_BUILD_LOG) process.stderr.write(d);
    });
    child.once('error', reject);
    child.once('close', (code) => {
      const dir = out.trim();
      if (code === 0 && dir) resolvePath(dir);
      else
        reject(new Error(`temporal-server binaries unavailable (ensure-temporal-server exit ${code}): ${err.trim()}`));
    });
  });
}
