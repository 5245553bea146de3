// What a supplier's transaction was, as a supplier adapter reports it and supplier_purchases keeps it
// (what each code cost us): a fact the port, the procurement and the store share.

/**
 * What the supplier says about one purchase (its own record of it), for the order's cost: a
 * supplier that tells nothing (the sandbox) leaves it out.
 */
export interface SupplierPurchase {
  /** Which supplier: `reloadly`. */
  supplier: string;
  /** The supplier's product id that was bought. */
  supplierProductId: string;
  /** The supplier's transaction id, when it has one. */
  transactionId: string | null;
  /** The supplier's own status word for the transaction (`SUCCESSFUL`, `PENDING`, …). */
  supplierStatus: string | null;
  /** Units in the supplier's transaction. */
  quantity: number;
  /** What one unit cost us, a Decimal string in `currency` (the supplier account's currency), fees included. */
  unitCost: string | null;
  /** What the whole transaction cost us, a Decimal string in `currency`. */
  totalCost: string | null;
  currency: string | null;
  /** The card's face value and its currency (what the end customer receives). */
  faceValue: string | null;
  faceCurrency: string | null;
}
