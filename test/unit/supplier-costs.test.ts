import { fromMicros, toMicros } from '../../src/domain/micros';
import { comparableCurrency, supplierMappings } from '../../src/services/supply/supplier-costs';

// Issue 26 item 2: the pieces of "what each product costs us" that need no database. Costs and
// revenue are summed exactly in millionths; a cost is held against a price in another currency
// only at par, as SUPPLIER_COST_AT_PAR says; the catalog's supplier follows the supplier's settings.

test.each([
  ['24.416667', 24_416_667n],
  ['48.80', 48_800_000n],
  ['-0.2', -200_000n],
  ['0', 0n],
  ['1000000.000001', 1_000_000_000_001n],
])('toMicros(%s) is %s millionths, and back', (decimal, micros) => {
  expect(toMicros(decimal)).toBe(micros);
  expect(toMicros(fromMicros(micros))).toBe(micros);
});

test('fromMicros writes six places, or two when the amount has no more; never rounds', () => {
  expect(fromMicros(-200_000n)).toBe('-0.200000');
  expect(fromMicros(48_800_000n, 2)).toBe('48.80');
  expect(() => fromMicros(1n, 2)).toThrow(RangeError);
  expect(() => toMicros('1.0000001')).toThrow(RangeError);
});

test.each<[string, string, boolean]>([
  ['USDT', 'USDT', true],
  ['USD', 'USDT', true],
  ['USD', 'USDC', true],
  ['USDT', 'USD', false],
  ['EUR', 'USDT', false],
])('a cost in %s against a price in %s, at par USD=USDT,USD=USDC: comparable %s', (cost, ours, comparable) => {
  expect(
    comparableCurrency(cost, ours, [
      ['USD', 'USDT'],
      ['USD', 'USDC'],
    ]),
  ).toBe(comparable);
  expect(comparableCurrency(cost, ours, [])).toBe(cost === ours);
});

test("the catalog names Reloadly's product id where RELOADLY_PRODUCTS maps one, the sandbox for every product, or nobody", () => {
  const ids = ['prod_a', 'prod_b'];
  const reloadlyProducts = { prod_a: { productId: 5, unitPrice: '10' } };
  expect(supplierMappings({ SUPPLIER_PROVIDER: 'reloadly', reloadlyProducts }, ids)).toEqual([
    { productId: 'prod_a', supplier: 'reloadly', supplierProductId: '5' },
    { productId: 'prod_b', supplier: null, supplierProductId: null },
  ]);
  expect(supplierMappings({ SUPPLIER_PROVIDER: 'sandbox', reloadlyProducts }, ids).map((m) => m.supplier)).toEqual([
    'sandbox',
    'sandbox',
  ]);
  expect(supplierMappings({ SUPPLIER_PROVIDER: 'none', reloadlyProducts }, ids).map((m) => m.supplier)).toEqual([
    null,
    null,
  ]);
});
