import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client as PgClient } from 'pg';
import { loadConfig } from '../../src/config';
import { ensureTemporalCli } from '../../src/dev/temporal';
import { ensureTemporalServerBinaries } from '../../src/dev/temporal-server';
import { interpolate, loadCompose, parseDotenv, serviceEnvironment, type Vars } from '../helpers/compose';
import { projectRoot } from '../helpers/production-app';

// docker-compose.yml is a deployment that starts (docs/operations.md, *Deploying*): the service's
// own config loader accepts the api and worker environments it gives, from .env.example filled in
// as its comments say, in production; only the API is published; Temporal is the server image with
// its schema set up by a one-shot admin-tools job (whose scripts run here for real).
const compose = loadCompose(join(projectRoot, 'docker-compose.yml'));
const example = parseDotenv(readFileSync(join(projectRoot, '.env.example'), 'utf8'));
const dir = mkdtempSync(join(tmpdir(), 'wholesale-compose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** .env.example as an operator fills it in: each empty value made by its `generate:` command or taken from its `example:`. */
function filledExample(): Vars {
  const vars: Vars = {};
  for (const { name, value, comments } of example) {
    const generate = comments
      .find((c) => c.startsWith('generate:'))
      ?.slice('generate:'.length)
      .trim();
    const sample = comments
      .find((c) => c.startsWith('example:'))
      ?.slice('example:'.length)
      .trim();
    vars[name] =
      value || (generate ? execFileSync('sh', ['-c', generate], { encoding: 'utf8' }).trim() : (sample ?? ''));
  }
  return vars;
}

/** The project's variables with the env file pointing at a copy of `vars` (single-quoted, as .env holds JSON). */
function project(vars: Vars): Vars {
  const file = join(dir, `env-${randomBytes(3).toString('hex')}`);
  writeFileSync(
    file,
    Object.entries(vars)
      .map(([k, v]) => `${k}='${v}'`)
      .join('\n'),
    { mode: 0o600 },
  );
  return { ...vars, WHOLESALE_ENV_FILE: file };
}

describe('.env.example', () => {
  test('every empty value says how to make it (a command to run, or an example of its form)', () => {
    const empty = example.filter((e) => e.value === '');
    expect(empty.map((e) => e.name)).toEqual(
      expect.arrayContaining([
        'PUBLIC_BASE_URL',
        'POSTGRES_PASSWORD',
        'TEMPORAL_PAYLOAD_KEYS',
        'CURSOR_SECRET',
        'SESSION_SECRET',
        'EVM_XPUB',
        'EVM_CHAINS',
      ]),
    );
    for (const e of empty)
      expect({ [e.name]: e.comments.some((c) => /^(generate|example):/.test(c)) }).toEqual({ [e.name]: true });
    // The parties a production start must name: no sandbox.
    expect(
      Object.fromEntries(
        example.filter((e) => /_PROVIDER$|^REDEMPTION_UPSTREAM$/.test(e.name)).map((e) => [e.name, e.value]),
      ),
    ).toEqual({ PAYMENT_PROVIDER: 'evm', SUPPLIER_PROVIDER: 'none', REDEMPTION_UPSTREAM: 'operators' });
  });

  test('left unfilled, it can never start: compose refuses the missing password and address, the service its secrets', () => {
    const raw = project(Object.fromEntries(example.map((e) => [e.name, e.value])));
    expect(() => serviceEnvironment(compose.services.api, raw, projectRoot)).toThrow(
      /POSTGRES_PASSWORD: set POSTGRES_PASSWORD in \.env/,
    );
    const env = serviceEnvironment(
      compose.services.api,
      { ...raw, POSTGRES_PASSWORD: 'x', PUBLIC_BASE_URL: 'https://w.example' },
      projectRoot,
    );
    expect(() => loadConfig(env)).toThrow(/EVM_CHAINS: required with PAYMENT_PROVIDER=evm/);
    // With the chains in but no secret made, each secret is named.
    const chains = example
      .find((e) => e.name === 'EVM_CHAINS')!
      .comments.find((c) => c.startsWith('example:'))!
      .slice('example:'.length)
      .trim();
    const message = (() => {
      try {
        loadConfig({ ...env, EVM_CHAINS: chains });
      } catch (err) {
        return (err as Error).message;
      }
    })();
    for (const name of ['TEMPORAL_PAYLOAD_KEYS', 'CURSOR_SECRET', 'EVM_XPUB'])
      expect(message).toContain(`${name}: the built-in development value must not be used in production`);
  });
});

describe('docker-compose.yml', () => {
  test.each(['api', 'worker'])(
    "the %s environment, from .env.example filled in, passes the service's production checks",
    (name) => {
      const vars = project(filledExample());
      const env = serviceEnvironment(compose.services[name], vars, projectRoot);
      const config = loadConfig(env);
      expect(config.NODE_ENV).toBe('production');
      expect(config.devSecrets).toEqual([]);
      expect(config).toMatchObject({
        PAYMENT_PROVIDER: 'evm',
        SUPPLIER_PROVIDER: 'none',
        REDEMPTION_UPSTREAM: 'operators',
        TEMPORAL_ADDRESS: 'temporal:7233',
        TEMPORAL_NAMESPACE: 'default',
        METRICS_PORT: 9464,
        HOST: '0.0.0.0',
        MIGRATE_ON_START: true,
        publicBaseUrl: 'https://wholesale.example.com',
        TRUST_PROXY: 1,
      });
      expect(config.evmChains).toEqual([expect.objectContaining({ chainId: 137, confirmations: 12 })]);
      expect(new URL(config.DATABASE_URL!).password).toBe(vars.POSTGRES_PASSWORD);
      // The image runs the compiled entry point of the same name.
      expect(compose.services[name].command).toEqual(['node', `dist/src/${name}.js`]);
      expect(existsSync(join(projectRoot, 'src', `${name}.ts`))).toBe(true);
    },
  );

  test('publishes the API only: no Temporal port, no UI, no Postgres, no metrics', () => {
    const vars = project(filledExample());
    const published = Object.entries(compose.services)
      .filter(([, s]) => s.ports?.length)
      .map(([name, s]) => [name, s.ports!.map((p) => interpolate(p, vars))]);
    expect(published).toEqual([['api', ['127.0.0.1:8080:8080']]]);
    expect(compose.services['temporal-ui']).toMatchObject({ profiles: ['ui'], expose: ['8080'] });
  });

  test('Temporal is the server image on Postgres, after a one-shot admin-tools schema job and before the service (no auto-setup)', () => {
    const images = Object.values(compose.services).map((s) => s.image ?? '');
    expect(images.some((i) => i.includes('auto-setup'))).toBe(false);
    expect(compose.services.temporal.image).toMatch(/^temporalio\/server:/);
    expect(compose.services['temporal-schema']).toMatchObject({
      image: expect.stringMatching(/^temporalio\/admin-tools:/),
      restart: 'no',
    });
    expect(compose.services.temporal.depends_on).toEqual({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    for (const name of ['api', 'worker']) {
      expect(compose.services[name].depends_on).toMatchObject({
        'temporal-namespace': { condition: 'service_completed_successfully' },
      });
    }
  });

  test("the schema job's script creates and upgrades Temporal's two databases, and a second run changes nothing", async () => {
    const bin = await ensureTemporalServerBinaries().catch((err: Error) => err);
    if (bin instanceof Error) {
      console.warn(`SKIPPED: temporal-sql-tool is unavailable: ${bin.message}`);
      return;
    }
    const url = new URL(process.env.TEST_DATABASE_URL!);
    const env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      POSTGRES_HOST: url.hostname,
      POSTGRES_PORT: url.port,
      POSTGRES_USER: url.username,
      SQL_PASSWORD: decodeURIComponent(url.password),
    };
    const admin = new PgClient({ connectionString: url.toString() });
    await admin.connect();
    try {
      const versions: string[][] = [];
      for (let run = 0; run < 2; run++) {
        execFileSync('sh', [join(projectRoot, 'deploy', 'compose', 'temporal-schema.sh')], { env, stdio: 'pipe' });
        const row = [];
        for (const db of ['temporal', 'temporal_visibility']) {
          const c = new PgClient({
            connectionString: Object.assign(new URL(url.toString()), { pathname: `/${db}` }).toString(),
          });
          await c.connect();
          row.push((await c.query('select curr_version from schema_version')).rows[0].curr_version as string);
          await c.end();
        }
        versions.push(row);
      }
      expect(versions[0].every((v) => /^\d+\.\d+$/.test(v) && v !== '0.0')).toBe(true);
      expect(versions[1]).toEqual(versions[0]);
    } finally {
      for (const db of ['temporal', 'temporal_visibility'])
        await admin.query(`drop database if exists "${db}" with (force)`);
      await admin.end();
    }
  }, 120_000);

  test("the namespace job's script creates the namespace once the server answers, and finds it the next time", () => {
    const cli = ensureTemporalCli();
    if (!cli) {
      console.warn('SKIPPED: no temporal CLI');
      return;
    }
    const namespace = `compose-${randomBytes(3).toString('hex')}`;
    const env = {
      ...process.env,
      PATH: `${dirname(cli)}:${process.env.PATH}`,
      TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS!,
      TEMPORAL_NAMESPACE: namespace,
    };
    const script = join(projectRoot, 'deploy', 'compose', 'temporal-namespace.sh');
    expect(execFileSync('sh', [script], { env, encoding: 'utf8' })).toContain(`${namespace} created`);
    expect(execFileSync('sh', [script], { env, encoding: 'utf8' })).toContain(`${namespace} exists`);
  }, 60_000);

  // Where a compose tool is installed it validates the file too; a fresh machine has none.
  const tool = [['docker-compose'], ['docker', 'compose']].find(
    ([cmd, ...sub]) => spawnSync(cmd, [...sub, 'version'], { stdio: 'ignore', timeout: 30_000 }).status === 0,
  );
  if (!tool)
    console.warn(
      'SKIPPED: docker-compose.yml not validated by a compose tool: neither docker-compose nor the docker compose plugin is installed',
    );
  (tool ? test : test.skip)('is a valid compose file (docker compose config)', () => {
    const [cmd, ...sub] = tool!;
    const result = spawnSync(cmd, [...sub, '-f', 'docker-compose.yml', 'config', '-q'], {
      cwd: projectRoot,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ...project(filledExample()) },
    });
    expect({ status: result.status, stderr: result.stderr.trim() }).toEqual({ status: 0, stderr: '' });
  });
});
