// The product a reseller's integration tests its orders with: unlisted, a cent at every level,
// bought only one at a time with the balance through REST (src/services/orders/orders.ts), seeded with
// the demo catalog (src/db/seed.ts).
export const TEST_PRODUCT_ID = 'prod_api_order_test';
