// A reseller's integration, written against a client generated from the published OpenAPI
// document: openapi-typescript (default options) makes `schema.d.ts`, openapi-fetch does the
// calls, and `tsc --strict` checks every path, parameter and body against the contract.
//
//   WHOLESALE_API_URL=http://127.0.0.1:8080/wholesale/v1 WHOLESALE_API_KEY=wsk_... npx tsx examples/typed-client/client.ts
//
// It lists products, places an order, reads it back, and lists the ledger, printing one JSON line
// per step. Regenerate the types after a change to the API with
//   UPDATE_TYPED_CLIENT=1 npx jest test/api/typed-client.test.ts
import createClient from 'openapi-fetch';
import type { paths } from './schema';

const baseUrl = process.env.WHOLESALE_API_URL ?? 'http://127.0.0.1:8080/wholesale/v1';
const apiKey = process.env.WHOLESALE_API_KEY;
if (!apiKey) throw new Error('set WHOLESALE_API_KEY');

// The document's paths carry /wholesale/v1, so the client's base is the service's origin.
const api = createClient<paths>({ baseUrl: new URL(baseUrl).origin, headers: { Authorization: `Bearer ${apiKey}` } });
const say = (step: string, value: unknown) => process.stdout.write(`${JSON.stringify({ step, value })}\n`);

async function main(): Promise<void> {
  const products = await api.GET('/wholesale/v1/products');
  if (!products.data) throw new Error(`list products: ${products.error?.error}`);
  const product = products.data.products.find((p) => p.available && p.deliveryType === 'redemption');
  if (!product) throw new Error('no product available');
  say('products', { count: products.data.products.length, chosen: product.id, price: product.price });

  const externalOrderId = process.env.EXAMPLE_ORDER_ID ?? `example-${Date.now()}`;
  const placed = await api.POST('/wholesale/v1/orders', {
    body: { externalOrderId, productId: product.id, qty: 1, expectedUnitPrice: product.price },
  });
  if (!placed.data) {
    // Errors are typed too: branch on the stable code, never on the message.
    throw new Error(`place order: ${placed.error?.error} (${placed.error?.requestId})`);
  }
  say('order', {
    orderId: placed.data.orderId,
    status: placed.data.status,
    codes: placed.data.codes.length,
    redeemUrl: placed.data.redeemUrl,
  });

  const order = await api.GET('/wholesale/v1/orders/{id}', { params: { path: { id: placed.data.orderId } } });
  if (!order.data) throw new Error(`read order: ${order.error?.error}`);
  say('detail', { status: order.data.status, amount: order.data.amount, unitPrice: order.data.unit_price });

  const ledger = await api.GET('/wholesale/v1/transactions', { params: { query: { limit: 10, type: 'purchase' } } });
  if (!ledger.data) throw new Error(`list transactions: ${ledger.error?.error}`);
  say(
    'transactions',
    ledger.data.transactions.map((t) => ({
      type: t.type,
      amount: t.amount,
      balanceAfter: t.balanceAfter,
      orderId: t.order_id,
    })),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
