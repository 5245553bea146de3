import { Writable } from 'node:stream';
import { generateCode, newId } from '../../src/codes';
import { initOrm, type Orm } from '../../src/db/orm';
import { createLogger } from '../../src/logger';
import { PinoTemporalLogger } from '../../src/temporal/runtime';
import { createTestDatabase } from '../helpers/harness';

// Secrets never reach logs, including through a failure's text: MikroORM inlines a statement's
// parameters into the SQL that a Postgres error quotes, and the Temporal SDK logs a failed
// activity's error. Here a real Postgres error names a checkout id, an API key, a webhook secret
// and a platform code; neither the service's logger nor the SDK's path into it lets one through.
let orm: Orm;
beforeAll(async () => {
  orm = await initOrm(await createTestDatabase());
});
afterAll(() => orm?.close(true));

const secrets = {
  checkout: newId('chk', 24),
  apiKey: newId('wsk', 24),
  webhookSecret: newId('whsec', 24),
  code: generateCode(),
};

async function postgresError(): Promise<Error> {
  const params = Object.values(secrets);
  const sql = `select 1 / 0 where ${params.map(() => '? is not null').join(' and ')}`;
  const err = await orm.em
    .fork()
    .getConnection()
    .execute(sql, params)
    .then(
      () => undefined,
      (e: unknown) => e as Error,
    );
  if (!err) throw new Error('the statement was meant to fail');
  return err;
}

function capture(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, sink };
}

test('a Postgres error quoting secrets is logged without them, by the service and by the SDK', async () => {
  const err = await postgresError();
  // The threat is real: the driver's message carries the parameters.
  expect(err.message).toContain(secrets.checkout);

  const { lines, sink } = capture();
  const logger = createLogger('trace', sink);
  logger.warn({ err }, 'statement failed');
  logger.child({ activity: 'scanEvmChain' }).error(`activity failed: ${err.message}`);
  new PinoTemporalLogger(logger).warn('Activity failed', { activityType: 'scanEvmChain', error: err });
  logger.warn({ err: { message: err.message } }, 'worker heartbeat not written');

  expect(lines).toHaveLength(4);
  const text = lines.join('');
  for (const value of Object.values(secrets)) expect(text).not.toContain(value);
  expect(text).toContain('chk_[redacted]');
  expect(text).toContain('wsk_[redacted]');
  expect(text).toContain('whsec_[redacted]');
  // What an operator needs stays: the cause and the statement's shape.
  expect(text).toContain('division by zero');
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
});

test('a secret in any logged field, at any depth, is scrubbed; the fields around it are kept', () => {
  const { lines, sink } = capture();
  const orderId = newId('ord');
  createLogger('info', sink).warn(
    {
      orderId,
      note: `retrying ${secrets.checkout}`,
      upstream: { response: { body: `{"key":"${secrets.apiKey}","secret":"${secrets.webhookSecret}"}` } },
      lines: [`delivered ${secrets.code}`],
      err: new Error(`declined ${secrets.checkout}`),
      at: new Date(0),
      deep: { a: { b: { c: { d: { e: { f: [`deep ${secrets.checkout}`] } } } } } },
    },
    'an upstream answer',
  );
  const out = lines.join('');
  for (const value of Object.values(secrets)) expect(out).not.toContain(value);
  const line = JSON.parse(out) as Record<string, any>;
  expect(line).toMatchObject({
    orderId,
    note: 'retrying chk_[redacted]',
    upstream: { response: { body: '{"key":"wsk_[redacted]","secret":"whsec_[redacted]"}' } },
    lines: ['delivered [redacted]'],
    err: { message: 'declined chk_[redacted]', type: 'Error' },
    at: '1970-01-01T00:00:00.000Z',
    deep: { a: { b: { c: { d: { e: { f: ['deep chk_[redacted]'] } } } } } },
  });
});

test('ids that are not secrets are kept as they are', () => {
  const { lines, sink } = capture();
  const orderId = newId('ord');
  createLogger('info', sink).info({ orderId }, `order ${orderId} placed; workflow order:acc_1:${orderId}`);
  expect(lines.join('')).toContain(`order ${orderId} placed`);
});
