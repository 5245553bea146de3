import { z } from './openapi';
import { DECIMAL_RE, isAmount, MAX_CENTS, toDecimal } from '../domain/money';
import { IdString } from './hygiene';

// Shared wire shapes (spec part 2), used both to parse and to document.
export const Decimal = z
  .string()
  .regex(DECIMAL_RE, 'must be a Decimal string such as "12.50"')
  .refine(isAmount, `must be at most ${toDecimal(MAX_CENTS)}`)
  .openapi({ example: '12.50' });
export const SignedDecimal = z.string().regex(/^-?\d+(\.\d{1,2})?$/);
export const Limit = z.coerce.number().int().min(1).max(100).default(50);
export const Cursor = IdString(512).optional();
export const Qty = z.coerce.number().int().min(1).max(1000);

const RedeemField = z.object({
  key: z.string(),
  label: z.string(),
  type: z.enum(['text', 'email', 'password', 'select', 'textarea']),
  required: z.boolean(),
  options: z.array(z.string()).optional(),
  placeholder: z.string().optional(),
});

/** A product's stock and availability as GET /products shows it, and product.updated repeats it. */
export const productAvailability = {
  inStock: z.boolean(),
  available: z.boolean(),
  stockMode: z.enum(['inventory', 'on_demand', 'limited']),
  stock: z.number().int().nullable(),
  stockCapped: z.boolean(),
  availabilityStatus: z.enum(['available', 'manual', 'degraded', 'unavailable']),
  deliveryMode: z.enum(['automatic', 'manual', 'manual_fallback', 'unavailable', 'test_code_only']),
};

export const Product = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    nameEn: z.string().nullable(),
    price: Decimal,
    retailPrice: Decimal,
    currency: z.enum(['USDT', 'USDC']),
    fulfillmentMode: z.enum(['manual', 'auto', 'code_only']),
    deliveryType: z.enum(['redemption', 'direct_code']),
    productGroupId: z.string().nullable(),
    denomination: z.string().nullable(),
    faceCurrency: z.string().nullable(),
    region: z.string().nullable(),
    ...productAvailability,
    redeemFields: z.array(RedeemField),
    redeemFieldsEn: z.array(RedeemField),
  })
  .openapi('Product');

export const Availability = z
  .object({
    productId: z.string(),
    qty: z.number().int(),
    available: z.boolean(),
    stockMode: z.enum(['inventory', 'on_demand', 'limited']),
    productGroupId: z.string().nullable(),
    denomination: z.string().nullable(),
    faceCurrency: z.string().nullable(),
    region: z.string().nullable(),
    deliveryType: z.enum(['redemption', 'direct_code']),
    unitPrice: Decimal,
    checkedAt: z.number().int(),
    availabilityStatus: z.enum(['available', 'manual', 'degraded', 'unavailable']),
    deliveryMode: z.enum(['automatic', 'manual', 'manual_fallback', 'unavailable', 'test_code_only']),
  })
  .openapi('Availability');

export const Balance = z.object({ balance: Decimal, currency: z.string() }).openapi('Balance');

const OrderStatus = z.enum(['pending', 'paid', 'delivered', 'expired', 'refunded']);
const FulfillmentStatus = z.enum([
  'awaiting_payment',
  'processing',
  'needs_attention',
  'delivered',
  'expired',
  'refunded',
]);

export const OrderCreate = z
  .object({
    orderId: z.string(),
    externalOrderId: z.string(),
    amount: Decimal,
    status: OrderStatus,
    codes: z.array(z.string()),
    checkoutUrl: z.string().optional(),
    paymentUrl: z.string().optional(),
    redeemUrl: z.string().nullable(),
    deliveryType: z.enum(['redemption', 'direct_code']),
    fulfillmentStatus: FulfillmentStatus.nullable(),
    fulfilledQuantity: z.number().int().min(0),
    // z.enum, not z.literal: the document must admit null (a literal's nullable lost it).
    errorCode: z.enum(['delivery_needs_attention']).nullable(),
    resolution: z.enum(['manual_review']).nullable(),
    reused: z.boolean(),
  })
  .openapi('OrderCreateResponse');

export const OrderSummary = z
  .object({
    id: z.string(),
    external_order_id: z.string().nullable(),
    channel: z.enum(['wholesale_api', 'topup']),
    product_id: z.string().nullable(),
    qty: z.number().int(),
    amount: Decimal,
    status: OrderStatus,
    deliveryType: z.enum(['redemption', 'direct_code']).nullable(),
    fulfillmentStatus: FulfillmentStatus.nullable(),
    fulfilledQuantity: z.number().int(),
    errorCode: z.string().nullable(),
    resolution: z.string().nullable(),
    redeemUrl: z.string().nullable(),
  })
  .openapi('OrderSummary');

export const OrderDetail = OrderSummary.omit({})
  .extend({
    order_number: z.string(),
    unit_price: Decimal,
    currency: z.string(),
    created_at: z.number().int(),
    paid_at: z.number().int().nullable(),
    product_name: z.string().nullable(),
    paymentUrl: z.string().nullable(),
    codes: z.array(z.string()),
    // A pending order paid at the service's own USDT/USDC checkout (PAYMENT_PROVIDER=evm): what
    // confirmed transfers brought so far, and what is still missing.
    amountReceived: Decimal.optional(),
    amountMissing: Decimal.optional(),
  })
  .openapi('OrderDetail');

export const Transaction = z
  .object({
    id: z.string(),
    type: z.enum(['topup', 'purchase', 'refund', 'adjust']),
    amount: SignedDecimal,
    balanceAfter: Decimal,
    order_id: z.string().nullable(),
    note: z.string().nullable(),
    created_at: z.number().int(),
  })
  .openapi('Transaction');
