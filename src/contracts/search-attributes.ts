import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// Custom search attributes kept current by the workflows, so ops can find orders in the
// Temporal UI (e.g. FulfillmentStatus = "needs_attention").
export const AccountIdKey = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const ExternalOrderIdKey = defineSearchAttributeKey('ExternalOrderId', SearchAttributeType.KEYWORD);
export const OrderStatusKey = defineSearchAttributeKey('OrderStatus', SearchAttributeType.KEYWORD);
export const FulfillmentStatusKey = defineSearchAttributeKey('FulfillmentStatus', SearchAttributeType.KEYWORD);

export const CUSTOM_SEARCH_ATTRIBUTES = [AccountIdKey, ExternalOrderIdKey, OrderStatusKey, FulfillmentStatusKey];
