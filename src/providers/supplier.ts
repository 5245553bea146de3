// The gift-card supplier (ARCHITECTURE "Providers are ports"): direct-code products are bought
// from it after the reseller has paid. One call is one purchase of up to `qty` units; the
// supplier may hand over fewer than asked, fail for a while, or refuse outright.

export interface ProcureResult {
  /** The real gift card codes obtained by this call; possibly fewer than asked, possibly none. */
  codes: string[];
}

export interface Supplier {
  /**
   * Buys up to `qty` units of `productId`. `idempotencyKey` names the purchase: a repeated call
   * with the same key (a retried activity) returns the same codes and buys nothing more.
   * Throws SupplierTransientError when asking again later may help, SupplierPermanentError when
   * it will not.
   */
  procure(productId: string, qty: number, idempotencyKey: string): Promise<ProcureResult>;
}

export class SupplierTransientError extends Error {
  constructor(message = 'supplier temporarily unavailable') {
    super(message);
    this.name = 'SupplierTransientError';
  }
}

export class SupplierPermanentError extends Error {
  constructor(message = 'supplier cannot supply this product') {
    super(message);
    this.name = 'SupplierPermanentError';
  }
}
