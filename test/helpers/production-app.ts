// The production image's /app, assembled from this checkout: package.json, bin/, the compiled
// dist/ (`npm run build`) and a node_modules holding only what `npm ci --omit=dev` installs (each
// top-level package of the lockfile that is not dev-only, linked to the installed copy). Our own
// code resolves packages from that folder only, so a require of tsx or of any devDependency fails
// there as it would in the image.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const projectRoot = resolve(__dirname, '..', '..');

interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  link?: boolean;
}

/** Top-level packages `npm ci --omit=dev` installs: not dev-only (devOptional ones stay, as npm keeps them). */
export function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(projectRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  return (
    Object.entries(lock.packages)
      .filter(([path, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && !entry.dev && !entry.link)
      .map(([path]) => path.slice('node_modules/'.length))
      // An optional package for another platform is not installed here, nor in the image.
      .filter((name) => existsSync(join(projectRoot, 'node_modules', name)))
  );
}

/** Runs `npm run build` in the checkout; resolves to its output, rejects with it. */
export function buildProduction(): Promise<string> {
  return new Promise((ok, fail) => {
    const child = spawn('npm', ['run', 'build'], {
      cwd: projectRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_ENV: 'production' },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (out += String(d)));
    child.once('close', (code) => (code === 0 ? ok(out) : fail(new Error(`npm run build exited ${code}:\n${out}`))));
  });
}

/** Assembles the image's /app under `dir`, optionally without the prebuilt workflow bundle. */
export function assembleApp(dir: string, opts: { bundle?: boolean } = {}): string {
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) cpSync(join(projectRoot, file), join(dir, file));
  cpSync(join(projectRoot, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(projectRoot, 'dist'), join(dir, 'dist'), {
    recursive: true,
    filter: (src) => opts.bundle !== false || src !== join(projectRoot, 'dist', 'workflow-bundle.js'),
  });
  for (const name of productionPackages()) {
    mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
    symlinkSync(join(projectRoot, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
  }
  return dir;
}

/**
 * The environment of a process in the image: the test's, without anything that could bring tsx
 * or the checkout's packages in (NODE_OPTIONS, NODE_PATH, node_modules/.bin on PATH).
 */
export function imageEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(NODE_OPTIONS|NODE_PATH|npm_|TS_|TSX_)/i.test(name)),
  );
  const path = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => dir && !dir.includes('node_modules'))
    .join(':');
  return { ...clean, PATH: path, ...env };
}

/** Whether `name` resolves from the app's compiled code (it must not, for tsx and devDependencies). */
export function resolvesFromApp(app: string, name: string): boolean {
  const probe = spawnSync(process.execPath, ['-e', `require.resolve(${JSON.stringify(name)})`], {
    cwd: join(app, 'dist'),
    env: imageEnv({}),
  });
  return probe.status === 0;
}

/**
 * `npm run <script>` in the app (what a user types; the image runs `node dist/src/<entry>.js`), in
 * a process group of its own so that `killGroup` reaches the node process under npm too.
 */
export function runScript(app: string, script: string, env: Record<string, string>): ChildProcess {
  return spawn('npm', ['run', '--silent', script], {
    cwd: app,
    env: imageEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
}

/** SIGKILL to a `runScript` child's whole process group (test cleanup). */
export function killGroup(child: ChildProcess): void {
  try {
    if (child.pid) process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** `node dist/src/<entry>.js` in the app: the image's CMD. */
export function runEntry(app: string, entry: 'api' | 'worker' | 'migrate', env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [join('dist', 'src', `${entry}.js`)], {
    cwd: app,
    env: imageEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Collects a child's output (both streams) for assertions and failure messages. */
export function output(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (d) => (text += String(d)));
  child.stderr?.on('data', (d) => (text += String(d)));
  return () => text;
}
