import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/harness';
import { projectRoot } from '../helpers/production-app';

// The image (Dockerfile): a build stage with every dependency that runs `npm run build`, a runtime
// stage with production dependencies only, the compiled code and the bundle, an unprivileged user,
// a health check on /readyz of METRICS_PORT and node itself as the command. No Docker engine runs
// here, so its parts are checked one by one: the stages as written, the health check script
// against a server, the pruning of the Temporal bridge on a copy of its layout.
const dir = mkdtempSync(join(tmpdir(), 'wholesale-image-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The Dockerfile's stages by name, each as its instruction lines (continuations joined). */
function stages(): Record<string, string[]> {
  const text = readFileSync(join(projectRoot, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const result: Record<string, string[]> = {};
  let current: string[] | undefined;
  for (const line of text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))) {
    const from = /^FROM\s+\S+\s+AS\s+(\S+)$/i.exec(line);
    if (from) result[from[1]] = current = [];
    else current?.push(line);
  }
  return result;
}

describe('Dockerfile', () => {
  const { build, runtime } = stages();

  test('builds in a stage of its own: every dependency, then `npm run build`', () => {
    expect(build).toEqual(expect.arrayContaining([expect.stringMatching(/^RUN npm ci\b/), 'RUN npm run build']));
    expect(build.some((l) => l.includes('--omit=dev'))).toBe(false);
  });

  test('runs with production dependencies only, the compiled code and its bundle, as a user other than root', () => {
    expect(runtime).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^RUN npm ci --omit=dev\b/),
        'COPY --from=build /app/dist ./dist',
        'USER node',
        'ENV NODE_ENV=production',
      ]),
    );
    // No TypeScript source and no tsx in the runtime stage: the compiled code is all it runs.
    expect(runtime.filter((l) => /^COPY\s+(src|workflows|activities)\b/.test(l))).toEqual([]);
    expect(runtime.join('\n')).not.toMatch(/tsx/);
    expect(runtime.indexOf('USER node')).toBeLessThan(runtime.findIndex((l) => l.startsWith('CMD')));
  });

  test('checks health on /readyz of METRICS_PORT and starts the API with node itself (SIGTERM reaches it)', () => {
    expect(runtime).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^HEALTHCHECK .*CMD \["node", "bin\/healthcheck\.js"\]$/),
        expect.stringMatching(/^ENV .*METRICS_PORT=9464/),
        'STOPSIGNAL SIGTERM',
        'CMD ["node", "dist/src/api.js"]',
      ]),
    );
  });
});

describe('bin/healthcheck.js', () => {
  let server: Server;
  let status = 200;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    server = createServer((req, res) => {
      res.statusCode = req.url === '/readyz' ? status : 404;
      res.end();
    });
    await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  });
  afterAll(() => new Promise((ok) => server.close(ok)));

  // Asynchronous: the server answering it runs in this process.
  const check = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stderr: string }>((ok) => {
      const child = spawn(process.execPath, ['bin/healthcheck.js'], {
        cwd: projectRoot,
        env: { PATH: process.env.PATH, ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += String(d)));
      child.once('close', (code) => ok({ code, stderr: stderr.trim() }));
    });

  test.each([
    [200, { METRICS_HOST: '0.0.0.0' }, 0],
    [503, { METRICS_HOST: '0.0.0.0' }, 1],
    [200, { METRICS_HOST: '127.0.0.1' }, 0],
  ])('exits 0 only when /readyz answers 200 (answer %i, %j)', async (answer, env, code) => {
    status = answer;
    expect((await check({ METRICS_PORT: String(port), ...env })).code).toBe(code);
  });

  test('exits 1 when nothing listens, and says so when METRICS_PORT is unset', async () => {
    expect((await check({ METRICS_PORT: String(await freePort()) })).code).toBe(1);
    expect(await check({})).toEqual({
      code: 1,
      stderr: 'healthcheck: METRICS_PORT is not set; the ops server (/readyz) listens there',
    });
  });
});

describe('scripts/prune-runtime.mjs', () => {
  const bridge = join(dir, 'node_modules', '@temporalio', 'core-bridge');
  const targets = [
    'x86_64-apple-darwin',
    'aarch64-apple-darwin',
    'x86_64-unknown-linux-gnu',
    'aarch64-unknown-linux-gnu',
    'x86_64-pc-windows-msvc',
  ];
  // The bridge's own choice of module for this machine.
  const here = spawnSync(
    process.execPath,
    ['-p', "require('@temporalio/core-bridge/common.js').getPrebuiltTargetName()"],
    { cwd: projectRoot, encoding: 'utf8' },
  ).stdout.trim();

  beforeAll(() => {
    for (const t of targets) {
      mkdirSync(join(bridge, 'releases', t), { recursive: true });
      writeFileSync(join(bridge, 'releases', t, 'index.node'), t);
    }
    mkdirSync(join(bridge, 'sdk-core', 'src'), { recursive: true });
    copyFileSync(
      join(projectRoot, 'node_modules', '@temporalio', 'core-bridge', 'common.js'),
      join(bridge, 'common.js'),
    );
  });

  test("keeps the Temporal bridge's native module for this platform only, and drops its Rust sources", () => {
    const r = spawnSync(
      process.execPath,
      [join(projectRoot, 'scripts', 'prune-runtime.mjs'), join(dir, 'node_modules')],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(0);
    expect(readdirSync(join(bridge, 'releases'))).toEqual([here]);
    expect(readFileSync(join(bridge, 'releases', here, 'index.node'), 'utf8')).toBe(here);
    expect(existsSync(join(bridge, 'sdk-core'))).toBe(false);
  });

  test("removes nothing when this platform's module is missing", () => {
    rmSync(join(bridge, 'releases', here), { recursive: true });
    mkdirSync(join(bridge, 'releases', 'other'), { recursive: true });
    const r = spawnSync(
      process.execPath,
      [join(projectRoot, 'scripts', 'prune-runtime.mjs'), join(dir, 'node_modules')],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(1);
    expect(readdirSync(join(bridge, 'releases'))).toEqual(['other']);
  });
});
