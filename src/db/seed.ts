import type { EntityManager } from '@mikro-orm/postgresql';
import { insertPriceIfNew, insertProductIfNew } from './catalog-store';
import type { Product, RedeemField } from './entities/all-entities';
import { TEST_PRODUCT_ID } from '../domain/test-product';

// The demo catalog: the integration test product, a few redemption products with the redeem
// field shapes of spec 2.3, and the three gift-card groups of spec 2.1. Seeding never overwrites
// a product an operator has changed.

type Seed = Omit<Product, 'createdAt' | 'sortOrder' | 'listed' | 'active' | 'isTest'> &
  Partial<Pick<Product, 'listed' | 'isTest'>> & { retail: number };

const sessionField = (label: string): RedeemField => ({
  key: 'session_user_id',
  label,
  type: 'textarea',
  required: true,
  placeholder: 'UUID or {"status":"authenticated","session":{"userId":"..."}}',
});

const redemptionProducts: Seed[] = [
  {
    id: 'prod_chatgpt_plus_1m',
    slug: 'chatgpt-plus-1-month',
    name: 'ChatGPT Plus 月卡',
    nameEn: 'ChatGPT Plus, 1 month',
    currency: 'USDT',
    fulfillmentMode: 'auto',
    deliveryType: 'redemption',
    inStock: true,
    stockMode: 'on_demand',
    availabilityStatus: 'available',
    deliveryMode: 'automatic',
    retail: 1800,
    redeemFields: [sessionField('会话信息（用户 ID 或会话 JSON）')],
    redeemFieldsEn: [sessionField('Session (user id or session JSON)')],
  },
  {
    id: 'prod_chatgpt_team_1m',
    slug: 'chatgpt-team-1-month',
    name: 'ChatGPT Team 月卡',
    nameEn: 'ChatGPT Team seat, 1 month',
    currency: 'USDT',
    fulfillmentMode: 'auto',
    deliveryType: 'redemption',
    inStock: true,
    stockMode: 'limited',
    limitedRemaining: 500,
    availabilityStatus: 'available',
    deliveryMode: 'automatic',
    retail: 2500,
    redeemFields: [
      {
        key: 'account_id',
        label: '组织 ID',
        type: 'text',
        required: true,
        placeholder: '00000000-0000-0000-0000-000000000000',
      },
      { key: 'email', label: '邮箱', type: 'email', required: true },
    ],
    redeemFieldsEn: [
      {
        key: 'account_id',
        label: 'Organization id',
        type: 'text',
        required: true,
        placeholder: '00000000-0000-0000-0000-000000000000',
      },
      { key: 'email', label: 'Email', type: 'email', required: true },
    ],
  },
  {
    id: 'prod_telegram_premium_3m',
    slug: 'telegram-premium-3-months',
    name: 'Telegram Premium 三个月',
    nameEn: 'Telegram Premium, 3 months',
    currency: 'USDT',
    fulfillmentMode: 'manual',
    deliveryType: 'redemption',
    inStock: true,
    stockMode: 'on_demand',
    availabilityStatus: 'manual',
    deliveryMode: 'manual',
    retail: 1399,
    redeemFields: [
      { key: 'telegram_username', label: 'Telegram 用户名', type: 'text', required: true, placeholder: '@username' },
    ],
    redeemFieldsEn: [
      { key: 'telegram_username', label: 'Telegram username', type: 'text', required: true, placeholder: '@username' },
    ],
  },
  {
    id: 'prod_spotify_premium_1m',
    slug: 'spotify-premium-1-month',
    name: 'Spotify Premium 月卡',
    nameEn: 'Spotify Premium, 1 month',
    currency: 'USDT',
    fulfillmentMode: 'code_only',
    deliveryType: 'redemption',
    inStock: true,
    stockMode: 'inventory',
    availabilityStatus: 'available',
    deliveryMode: 'automatic',
    retail: 650,
    redeemFields: [{ key: 'email', label: '邮箱', type: 'email', required: true }],
    redeemFieldsEn: [],
  },
];

const giftCard = (
  group: string,
  face: string,
  region: string,
  label: string,
  labelEn: string,
  denomination: string,
  retail: number,
): Seed => ({
  id: `prod_${group.replace(/-/g, '_')}_${denomination}`,
  slug: `${group}-${denomination}`,
  name: `${label} ${denomination}`,
  nameEn: `${labelEn} ${denomination}`,
  currency: 'USDT',
  fulfillmentMode: 'code_only',
  deliveryType: 'direct_code',
  productGroupId: group,
  denomination,
  faceCurrency: face,
  region,
  inStock: true,
  stockMode: 'on_demand',
  availabilityStatus: 'available',
  deliveryMode: 'automatic',
  redeemFields: [],
  redeemFieldsEn: [],
  retail,
});

const giftCards: Seed[] = [
  giftCard('apple-gift-card-us', 'USD', 'US', 'Apple 礼品卡 (美区) $', 'Apple Gift Card (US) $', '10', 985),
  giftCard('apple-gift-card-us', 'USD', 'US', 'Apple 礼品卡 (美区) $', 'Apple Gift Card (US) $', '25', 2450),
  giftCard('apple-gift-card-us', 'USD', 'US', 'Apple 礼品卡 (美区) $', 'Apple Gift Card (US) $', '50', 4880),
  giftCard('apple-gift-card-us', 'USD', 'US', 'Apple 礼品卡 (美区) $', 'Apple Gift Card (US) $', '100', 9700),
  giftCard('roblox-gift-card-us', 'USD', 'US', 'Roblox 礼品卡 (美区) $', 'Roblox Gift Card (US) $', '10', 990),
  giftCard('roblox-gift-card-us', 'USD', 'US', 'Roblox 礼品卡 (美区) $', 'Roblox Gift Card (US) $', '25', 2460),
  giftCard('roblox-gift-card-us', 'USD', 'US', 'Roblox 礼品卡 (美区) $', 'Roblox Gift Card (US) $', '50', 4900),
  giftCard('robux', 'ROBUX', 'GLOBAL', 'Robux', 'Robux', '400', 520),
  giftCard('robux', 'ROBUX', 'GLOBAL', 'Robux', 'Robux', '800', 1030),
  giftCard('robux', 'ROBUX', 'GLOBAL', 'Robux', 'Robux', '1700', 2150),
];

const testProduct: Seed = {
  id: TEST_PRODUCT_ID,
  slug: 'api-order-test',
  name: 'API 下单测试商品',
  nameEn: 'API order test product',
  currency: 'USDT',
  fulfillmentMode: 'auto',
  deliveryType: 'redemption',
  inStock: true,
  stockMode: 'on_demand',
  availabilityStatus: 'available',
  deliveryMode: 'test_code_only',
  redeemFields: [],
  redeemFieldsEn: [],
  retail: 1,
  listed: false,
  isTest: true,
};

/** Level discounts off the Lv1 list price: Lv2 -2%, Lv3 -4%, Lv4 -6%, Lv5 -8%. */
export function levelPrices(retail: number, flat = false): number[] {
  return [0, 2, 4, 6, 8].map((pct) => (flat ? retail : Math.round((retail * (100 - pct)) / 100)));
}

export const demoCatalog: Seed[] = [testProduct, ...redemptionProducts, ...giftCards];

export async function seedCatalog(em: EntityManager, seeds: Seed[] = demoCatalog): Promise<void> {
  for (const [i, s] of seeds.entries()) {
    const inserted = await insertProductIfNew(em, {
      ...s,
      nameEn: s.nameEn ?? null,
      productGroupId: s.productGroupId ?? null,
      denomination: s.denomination ?? null,
      faceCurrency: s.faceCurrency ?? null,
      region: s.region ?? null,
      limitedRemaining: s.limitedRemaining ?? null,
      listed: s.listed ?? true,
      isTest: s.isTest ?? false,
      sortOrder: i * 10,
    });
    if (!inserted) continue;
    const prices = levelPrices(s.retail, s.isTest);
    for (const [level, cents] of prices.entries()) {
      await insertPriceIfNew(em, s.id, level + 1, (cents / 100).toFixed(2));
    }
  }
}
