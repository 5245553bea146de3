// The gift-card supplier (ARCHITECTURE "Providers are ports"): direct-code products are bought
// from it after the reseller has paid. One call is one purchase of up to `qty` units; the
// supplier may hand over fewer than asked, fail for a while, or refuse outright.

import type { SupplierPurchase } from '../domain/supplier-purchase';

export type { SupplierPurchase };

export interface ProcureResult {
  /** The real gift card codes obtained by this call; possibly fewer than asked, possibly none. */
  codes: string[];
  /** The supplier's record of this purchase (transaction id, cost), when it gives one. */
  purchase?: SupplierPurchase;
}

export interface Supplier {
  /** The name a purchase is recorded under (supplier_purchases), for suppliers that report purchases. */
  readonly name?: string;
  /**
   * Buys up to `qty` units of `productId`. `idempotencyKey` names the purchase: a repeated call
   * with the same key (a retried activity) returns the same codes and buys nothing more.
   * Throws SupplierTransientError when asking again later may help, SupplierPermanentError when
   * it will not.
   */
  procure(productId: string, qty: number, idempotencyKey: string): Promise<ProcureResult>;
}

export interface SupplierTransientOptions {
  /**
   * The supplier asked us not to call before this many milliseconds have passed (HTTP 429 with
   * Retry-After). The adapter already waits for short hints itself and refuses calls before the
   * time is up; this tells the caller how long that is.
   */
  retryAfterMs?: number;
  /**
   * A purchase under this key exists or may exist at the supplier (it is still processing, or its
   * answer was lost): the caller must ask again with the same key, never buy under a new one,
   * until the purchase ends one way or the other.
   */
  inFlight?: boolean;
  /** The supplier's record of the purchase, when it is known. */
  purchase?: SupplierPurchase;
}

export class SupplierTransientError extends Error {
  readonly retryAfterMs?: number;
  readonly inFlight: boolean;
  readonly purchase?: SupplierPurchase;

  constructor(message = 'supplier temporarily unavailable', opts: SupplierTransientOptions = {}) {
    super(message);
    this.name = 'SupplierTransientError';
    this.retryAfterMs = opts.retryAfterMs;
    this.inFlight = opts.inFlight ?? false;
    this.purchase = opts.purchase;
  }
}

export class SupplierPermanentError extends Error {
  /** The supplier's record of a purchase that ended without cards (failed, refunded), when there was one. */
  readonly purchase?: SupplierPurchase;

  constructor(message = 'supplier cannot supply this product', opts: { purchase?: SupplierPurchase } = {}) {
    super(message);
    this.name = 'SupplierPermanentError';
    this.purchase = opts.purchase;
  }
}
