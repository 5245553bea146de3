import { EntitySchema, type Opt } from '@mikro-orm/core';
import type { RedeemFieldDef } from '../../domain/redeem-info';
import { createdAt, money, timestamp } from './entity-columns';

// Products, their level prices, and the imported codes of inventory products.

/** A product's redeem field (spec 2.3), as the shared redeemInfo validation defines it. */
export type RedeemField = RedeemFieldDef;

export interface Product {
  id: string;
  slug: string;
  name: string;
  nameEn?: string | null;
  currency: 'USDT' | 'USDC';
  fulfillmentMode: 'manual' | 'auto' | 'code_only';
  deliveryType: 'redemption' | 'direct_code';
  productGroupId?: string | null;
  denomination?: string | null;
  faceCurrency?: string | null;
  region?: string | null;
  inStock: boolean;
  stockMode: 'inventory' | 'on_demand' | 'limited';
  /** Hidden remaining count for `limited` products. */
  limitedRemaining?: number | null;
  availabilityStatus: 'available' | 'manual' | 'degraded' | 'unavailable';
  deliveryMode: 'automatic' | 'manual' | 'manual_fallback' | 'unavailable' | 'test_code_only';
  redeemFields: RedeemField[];
  redeemFieldsEn: RedeemField[];
  /** Listed in GET /products; the test product is readable by id only. */
  listed: boolean;
  active: boolean;
  isTest: boolean;
  sortOrder: number;
  createdAt: Date & Opt;
}
export const ProductSchema = new EntitySchema<Product>({
  name: 'Product',
  tableName: 'products',
  properties: {
    id: { type: 'string', primary: true },
    slug: { type: 'string' },
    name: { type: 'string' },
    nameEn: { type: 'string', nullable: true },
    currency: { type: 'string', length: 8 },
    fulfillmentMode: { type: 'string', length: 16 },
    deliveryType: { type: 'string', length: 16 },
    productGroupId: { type: 'string', nullable: true, index: true },
    denomination: { type: 'string', nullable: true },
    faceCurrency: { type: 'string', nullable: true },
    region: { type: 'string', nullable: true },
    inStock: { type: 'boolean' },
    stockMode: { type: 'string', length: 16 },
    limitedRemaining: { type: 'integer', nullable: true },
    availabilityStatus: { type: 'string', length: 16 },
    deliveryMode: { type: 'string', length: 24 },
    redeemFields: { type: 'json' },
    redeemFieldsEn: { type: 'json' },
    listed: { type: 'boolean' },
    active: { type: 'boolean' },
    isTest: { type: 'boolean' },
    sortOrder: { type: 'integer' },
    createdAt,
  },
});

export interface ProductPrice {
  productId: string;
  level: number;
  price: string;
}
export const ProductPriceSchema = new EntitySchema<ProductPrice>({
  name: 'ProductPrice',
  tableName: 'product_prices',
  properties: {
    productId: { type: 'string', primary: true },
    level: { type: 'integer', primary: true },
    price: { ...money },
  },
});

/** Imported codes of `inventory` products; each is sold once. */
export interface StockCode {
  id: number;
  productId: string;
  code: string;
  orderId?: string | null;
  importedAt: Date & Opt;
  soldAt?: Date | null;
}
export const StockCodeSchema = new EntitySchema<StockCode>({
  name: 'StockCode',
  tableName: 'stock_codes',
  uniques: [{ properties: ['productId', 'code'] }],
  indexes: [{ properties: ['productId', 'orderId'] }],
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    productId: { type: 'string' },
    code: { type: 'string' },
    orderId: { type: 'string', nullable: true },
    importedAt: { ...createdAt },
    soldAt: { ...timestamp, nullable: true },
  },
});
