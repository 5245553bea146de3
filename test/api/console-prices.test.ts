import { seedCatalog } from '../../src/db/seed';
import { auditRows, postFrom, signedIn, staffMember, type Member } from '../helpers/console';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { ledgerOf } from '../helpers/money';

// Prices in the staff console: everyone signed in reads them, only an admin sets one, with a
// reason, as an audited action; a reseller reads the new price at once and an order that still
// expects the old one is refused with price_changed, not charged.
let h: Harness;
let admin: Member, support: Member;
const PRODUCT = 'prod_api_order_test';

beforeAll(async () => {
  h = await startHarness({});
  await seedCatalog(h.services.orm.em.fork());
  admin = await staffMember(h, 'admin', { name: 'Ada Admin' });
  support = await staffMember(h, 'support', { name: 'Sam Support' });
}, 180_000);
afterAll(() => h?.stop());

const priceAt = async (level: number) => {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ price: string }[]>('select price from product_prices where product_id = ? and level = ?', [
      PRODUCT,
      level,
    ]);
  return row?.price;
};

test('an admin sets a level price with a reason; the reseller sees it and an order at the old price is price_changed', async () => {
  const { api, accountId } = await reseller(h, '5.00');
  const before = await api.get(`/products/${PRODUCT}`);
  expect(before.status).toBe(200);
  const oldPrice: string = before.body.price;

  const session = await signedIn(h, admin);
  const page = await session.get('/console/prices');
  expect(page.status).toBe(200);
  expect(page.text).toContain(`data-product="${PRODUCT}"`);
  expect(page.text).toContain('data-testid="set-price"');

  const set = await postFrom(session, '/console/prices', `/console/prices/${PRODUCT}`, {
    level: '1',
    price: '0.03',
    reason: 'supplier <b>cost</b> rose',
  });
  expect(set.status).toBe(303);
  expect(Number(await priceAt(1))).toBe(0.03);
  const shown = await session.get('/console/prices?notice=priced');
  expect(shown.text).toContain('The price is set.');

  const after = await api.get(`/products/${PRODUCT}`);
  expect(after.body.price).toBe('0.03');
  const refused = await api.post('/orders', {
    externalOrderId: 'old-price',
    productId: PRODUCT,
    qty: 1,
    expectedUnitPrice: oldPrice,
  });
  expect(refused.status).toBe(409);
  expect(refused.body.error).toBe('price_changed');
  const money = await ledgerOf(h, accountId);
  expect(money.balanceCents).toBe(500);
  expect(money.rows.map((r) => r.type)).toEqual(['adjust']);

  const rows = await auditRows(h, `action = 'price.set' and subject_id = ?`, [PRODUCT]);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({
    actor: 'Ada Admin',
    role: 'admin',
    reason: 'supplier <b>cost</b> rose',
    outcome: 'ok',
    details: { level: 1, price: '0.03' },
  });
  expect(rows[0].request_id).toMatch(/^req_/);
});

test('support reads prices but cannot set one; a bad price changes nothing', async () => {
  const before = await priceAt(2);
  const session = await signedIn(h, support);
  const page = await session.get('/console/prices');
  expect(page.status).toBe(200);
  expect(page.text).not.toContain('data-testid="set-price"');
  const refused = await postFrom(session, '/console/prices', `/console/prices/${PRODUCT}`, {
    level: '2',
    price: '9.99',
    reason: 'try',
  });
  expect(refused.status).toBe(403);
  expect(await priceAt(2)).toBe(before);

  const adminSession = await signedIn(h, admin);
  for (const fields of [
    { level: '2', price: '0', reason: 'zero' },
    { level: '9', price: '1.00', reason: 'no such level' },
    { level: '2', price: 'abc', reason: 'junk' },
    { level: '2', price: '1.00', reason: '' },
  ]) {
    const bad = await postFrom(adminSession, '/console/prices', `/console/prices/${PRODUCT}`, fields);
    expect(bad.status).toBe(400);
  }
  const missing = await postFrom(adminSession, '/console/prices', '/console/prices/prod_nope', {
    level: '2',
    price: '1.00',
    reason: 'gone',
  });
  expect(missing.status).toBe(404);
  expect(await priceAt(2)).toBe(before);
  // The refused and invalid tries ran nothing: no price.set row ended `ok` but the first test's.
  const rows = await auditRows(h, `action = 'price.set'`);
  expect(rows.filter((r) => r.outcome === 'ok')).toHaveLength(1);
  expect(rows.some((r) => r.actor === 'Sam Support')).toBe(false);
});
