import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startHarness, type Harness } from '../helpers/harness';
import { contractViolation } from '../helpers/contract';
import { call, client } from '../helpers/http';

// Issue 13: the OpenAPI document is a contract clients can build on. It passes two independent
// OpenAPI 3.1 validators; every operation has a stable operationId, tags, the spec's error codes
// and response headers; the six webhook events are published; and the helper that holds every
// API test's answers to the document really fails a wrong body or an undeclared status.
const ADMIN_TOKEN = 'admin-token-for-contract-tests';
let h: Harness;
let doc: any;
let adminDoc: any;

beforeAll(async () => {
  h = await startHarness({ ADMIN_TOKEN }, { worker: false });
  doc = (await call(`${h.apiUrl}/openapi.json`)).body;
  adminDoc = (await call(`${h.baseUrl}/admin/v1/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
    .body;
});
afterAll(() => h?.stop());

const operations = (d: any) =>
  Object.entries<any>(d.paths).flatMap(([path, item]) =>
    Object.entries<any>(item).map(([method, op]) => ({ path, method, op })),
  );

describe('two independent OpenAPI 3.1 validators (scripts/check-openapi.mjs)', () => {
  test.each([
    ['reseller API', () => doc],
    ['admin API', () => adminDoc],
  ])(
    '%s: @seriousme/openapi-schema-validator and redocly lint find no error and no warning',
    (_name, get) => {
      const file = join(mkdtempSync(join(tmpdir(), 'openapi-')), 'openapi.json');
      writeFileSync(file, JSON.stringify(get()));
      const out = spawnSync(process.execPath, ['scripts/check-openapi.mjs', file], {
        cwd: resolve(__dirname, '..', '..'),
        encoding: 'utf8',
      });
      const report = JSON.parse(out.stdout.trim().split('\n').pop()!);
      expect({ seriousme: report.seriousme, redocly: report.redocly }).toEqual({ seriousme: [], redocly: [] });
      expect(out.status).toBe(0);
    },
    60_000,
  );
});

describe('what integrators need from the document', () => {
  test('every operation has a unique operationId, a tag, a summary, the bearer scheme and X-Request-Id on every answer', () => {
    const ops = [...operations(doc), ...operations(adminDoc)];
    const ids = ops.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(
      operations(doc)
        .map((o) => o.op.operationId)
        .sort(),
    ).toEqual([
      'checkAvailability',
      'createBatch',
      'createExport',
      'createOrder',
      'createTopup',
      'downloadExport',
      'exportLedgerCsv',
      'exportOrdersCsv',
      'getBalance',
      'getBatch',
      'getExport',
      'getOrder',
      'getProduct',
      'getRedemption',
      'getRedemptionByCode',
      'getWebhook',
      'listBatchLines',
      'listOrders',
      'listProducts',
      'listTransactions',
      'listWebhookDeliveries',
      'resendWebhookDeliveries',
      'retryWebhookDelivery',
      'sendTestWebhook',
      'setWebhook',
      'submitRedemption',
    ]);
    for (const { op } of ops) {
      expect(op.tags).toHaveLength(1);
      expect(op.summary).toMatch(/\S/);
      for (const [status, r] of Object.entries<any>(op.responses)) {
        expect([status, r.headers?.['X-Request-Id']?.required]).toEqual([status, true]);
      }
      expect(op.responses.default).toBeDefined();
      expect(op.responses['500'].content['application/json'].examples.internal_error.value).toMatchObject({
        error: 'internal_error',
        retryable: true,
      });
    }
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
    // An export's download link is its own credential; the CSV answers say so in their content type.
    const download = doc.paths['/wholesale/v1/exports/{id}/download'].get;
    expect(download.security).toEqual([]);
    for (const op of [
      download,
      doc.paths['/wholesale/v1/exports/orders.csv'].get,
      doc.paths['/wholesale/v1/exports/ledger.csv'].get,
    ]) {
      expect(Object.keys(op.responses['200'].content)).toEqual(['text/csv']);
      expect(op.responses['200'].headers['Content-Disposition'].required).toBe(true);
    }
  });

  test('the spec 7 codes sit on the operations that produce them, each with an example', () => {
    const op = (path: string, method: string) => doc.paths[`/wholesale/v1${path}`][method];
    const codesOf = (o: any) =>
      Object.values<any>(o.responses).flatMap((r) => Object.keys(r.content?.['application/json']?.examples ?? {}));
    expect(codesOf(op('/redemptions', 'post'))).toEqual(
      expect.arrayContaining(['code_expired', 'test_code_only', 'retry_conflict', 'already_redeemed', 'invalid_code']),
    );
    expect(codesOf(op('/orders', 'post'))).toEqual(
      expect.arrayContaining([
        'insufficient_balance',
        'not_found',
        'duplicate_order',
        'idempotency_conflict',
        'out_of_stock',
        'insufficient_stock',
        'stock_unavailable',
        'fulfillment_unavailable',
        'price_changed',
        'api_test_quantity',
        'api_test_balance_only',
        'payment_provider_error',
        'payment_provider_timeout',
        'rate_limited',
        'unauthorized',
        'invalid_input',
        'internal_error',
        'service_unavailable',
      ]),
    );
    expect(
      op('/orders', 'post').responses['409'].content['application/json'].examples.price_changed.value.details,
    ).toEqual({ actualUnitPrice: '17.64' });
    expect(Object.keys(op('/orders', 'post').responses['429'].headers)).toEqual(
      expect.arrayContaining(['Retry-After', 'X-RateLimit-Limit']),
    );
    expect(Object.keys(op('/topup', 'post').responses['200'].headers)).toEqual(
      expect.arrayContaining(['Warning', 'X-RateLimit-Remaining']),
    );
    expect(codesOf(op('/transactions', 'get'))).toContain('invalid_cursor');
  });

  test('webhooks: the six events of spec 6, the two that answer exports and batches, and the two opt-in ones with the flat envelope, their payloads and the four signature headers', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'balance.low',
      'batch.completed',
      'export.ready',
      'order.delivered',
      'order.delivery_attention',
      'product.updated',
      'redemption.failed',
      'redemption.fulfilled',
      'topup.credited',
      'webhook.test',
    ]);
    const schemaOf = (event: string) => {
      const ref = doc.webhooks[event].post.requestBody.content['application/json'].schema.$ref as string;
      return doc.components.schemas[ref.split('/').pop()!];
    };
    for (const event of Object.keys(doc.webhooks)) {
      expect(schemaOf(event).required).toEqual(expect.arrayContaining(['eventId', 'event', 'timestamp']));
      const headers = doc.webhooks[event].post.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name);
      expect(headers.sort()).toEqual([
        'X-Wholesale-Delivery-Id',
        'X-Wholesale-Event-Id',
        'X-Wholesale-Signature',
        'X-Wholesale-Timestamp',
      ]);
    }
    expect(schemaOf('order.delivered').required).toEqual(
      expect.arrayContaining(['orderId', 'externalOrderId', 'productId', 'qty', 'codes', 'redeemUrl', 'deliveryType']),
    );
    expect(schemaOf('order.delivery_attention').properties.eventId.pattern).toBe(
      '^order:[^:]+:order\\.delivery_attention$',
    );
    expect(schemaOf('redemption.failed').properties.eventId.pattern).toMatch(/^\^redemption:/);
    expect(schemaOf('topup.credited').properties.eventId.pattern).toMatch(/^\^evt_/);
    expect(schemaOf('product.updated').required).toEqual(
      expect.arrayContaining(['productId', 'changed', 'price', 'available', 'stock']),
    );
    expect(schemaOf('balance.low').required).toEqual(
      expect.arrayContaining(['balance', 'threshold', 'currency', 'transactionType', 'orderId']),
    );
    for (const event of ['product.updated', 'balance.low'])
      expect(doc.webhooks[event].post.description).toMatch(/^Opt-in \(extension beyond spec 1\.4\.0\)/);
    // Sent like the spec's events (an endpoint's list may leave them out), to accounts that asked for them.
    expect(schemaOf('export.ready').required).toEqual(
      expect.arrayContaining(['exportId', 'externalExportId', 'kind', 'rows', 'expiresAt']),
    );
    expect(schemaOf('batch.completed').required).toEqual(
      expect.arrayContaining(['batchId', 'externalBatchId', 'total', 'placed', 'rejected']),
    );
    for (const event of ['export.ready', 'batch.completed'])
      expect(doc.webhooks[event].post.description).toMatch(
        /^Extension beyond spec 1\.4\.0, sent like the spec's events/,
      );
  });

  test('scoped keys (extension): each operation names the key scope it needs, and answers 403 with the three codes that say why', () => {
    const scopes = Object.fromEntries(operations(doc).map(({ op }) => [op.operationId, op.security]));
    expect(scopes).toMatchObject({
      listProducts: [{ bearer: ['read'] }],
      getBalance: [{ bearer: ['read'] }],
      listTransactions: [{ bearer: ['read'] }],
      createOrder: [{ bearer: ['orders'] }],
      createTopup: [{ bearer: ['topups'] }],
      submitRedemption: [{ bearer: ['redemptions'] }],
      getWebhook: [{ bearer: ['webhooks'] }],
      setWebhook: [{ bearer: ['webhooks'] }],
      resendWebhookDeliveries: [{ bearer: ['webhooks'] }],
      exportOrdersCsv: [{ bearer: ['read'] }],
      exportLedgerCsv: [{ bearer: ['read'] }],
      createExport: [{ bearer: ['read'] }],
      getExport: [{ bearer: ['read'] }],
      createBatch: [{ bearer: ['orders'] }],
      getBatch: [{ bearer: ['read'] }],
      listBatchLines: [{ bearer: ['read'] }],
      downloadExport: [],
    });
    // Every operation that takes a key; an export's download link is its own credential.
    for (const { op } of operations(doc).filter(({ op }) => op.operationId !== 'downloadExport')) {
      expect([op.operationId, Object.keys(op.responses['403'].content['application/json'].examples).sort()]).toEqual([
        op.operationId,
        ['insufficient_scope', 'ip_not_allowed', 'key_expired'],
      ]);
      expect(op.responses['403'].description).toMatch(/^`insufficient_scope`: Extension \(scoped keys\)/);
    }
  });

  test('nullable enums admit null (every POST /orders answer used to fail validation on errorCode and resolution)', () => {
    const order = doc.components.schemas.OrderCreateResponse.properties;
    expect(order.errorCode.enum).toContain(null);
    expect(order.resolution.enum).toContain(null);
    // A field with a default is not published with it: generated clients would make it required.
    expect(doc.components.schemas.CreateOrder.properties.payment.default).toBeUndefined();
  });
});

describe('the response validator of the API tests', () => {
  let key: string;
  beforeAll(async () => {
    key = (await h.account('5.00')).apiKey;
  });

  const real = async () => {
    const res = await fetch(`${h.apiUrl}/balance`, { headers: { authorization: `Bearer ${key}` } });
    return {
      method: 'GET',
      url: `${h.apiUrl}/balance`,
      status: res.status,
      headers: res.headers,
      text: await res.text(),
    };
  };

  test('passes a real answer', async () => {
    expect(await contractViolation(await real())).toBeUndefined();
    expect((await client(h.apiUrl, key).get('/balance')).body).toEqual({ balance: '5.00', currency: 'USDT' });
  });

  test('fails a wrong body', async () => {
    const answer = { ...(await real()), text: JSON.stringify({ balance: 5, currency: 'USDT' }) };
    expect(await contractViolation(answer)).toMatch(/body breaks the document.*balance/);
  });

  test('fails an undeclared status', async () => {
    const answer = { ...(await real()), status: 418 };
    expect(await contractViolation(answer)).toMatch(/status 418 is not declared for getBalance/);
  });

  test('fails a missing X-Request-Id and an ill-typed rate-limit header', async () => {
    const r = await real();
    const without = new Headers(r.headers);
    without.delete('x-request-id');
    expect(await contractViolation({ ...r, headers: without })).toMatch(/required header X-Request-Id missing/);
    const bad = new Headers(r.headers);
    bad.set('x-ratelimit-remaining', 'lots');
    expect(await contractViolation({ ...r, headers: bad })).toMatch(/header X-RateLimit-Remaining=lots/);
  });

  test('fails an error body without its code', async () => {
    const res = await fetch(`${h.apiUrl}/orders/nope`, { headers: { authorization: `Bearer ${key}` } });
    const answer = {
      method: 'GET',
      url: `${h.apiUrl}/orders/nope`,
      status: res.status,
      headers: res.headers,
      text: await res.text(),
    };
    expect(await contractViolation(answer)).toBeUndefined();
    expect(await contractViolation({ ...answer, text: JSON.stringify({ message: 'no' }) })).toMatch(
      /must have required property 'error'/,
    );
  });
});
