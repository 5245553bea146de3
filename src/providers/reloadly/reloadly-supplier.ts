import type { Logger } from 'pino';
import {
  SupplierPermanentError,
  SupplierTransientError,
  type ProcureResult,
  type Supplier,
  type SupplierPurchase,
} from '../supplier';
import {
  CUSTOM_IDENTIFIER_ALREADY_USED,
  ENDED_WITHOUT_CARDS,
  STILL_WORKING,
  SUCCESSFUL,
  cardsAnswer,
  codeOf,
  decimal6,
  divide6,
  reasonOf,
  transactionAnswer,
  transactionsPage,
  type Transaction,
} from './reloadly-answers';
import { ReloadlyClient } from './reloadly-client';
import type { ReloadlyProductMapping, ReloadlySettings } from './reloadly-settings';

// Gift cards bought from Reloadly (SUPPLIER_PROVIDER=reloadly). One procure call is one order,
// `POST /orders` with our idempotency key as its customIdentifier, then the cards of its
// transaction. Reloadly does not answer a repeated identifier with the existing order (it refuses
// it with CUSTOM_IDENTIFIER_ALREADY_USED), so whenever an order may have been taken without us
// hearing so (no answer, a 5xx, an unreadable answer, that refusal) the transaction is looked up
// by its identifier instead of buying again; and a purchase that may exist is reported `inFlight`
// so that procurement asks again under the same key, never a new one.

const SUPPLIER = 'reloadly';
/**
 * One procure call ends within this long, whatever Reloadly does: well inside the procurement
 * activity's 5-minute start-to-close, so Temporal never retries a call that is still running (two
 * orders under one identifier at once may both go through).
 */
const CALL_BUDGET_MS = 120_000;

export class ReloadlySupplier implements Supplier {
  readonly name = SUPPLIER;
  private readonly client: ReloadlyClient;

  constructor(
    private readonly settings: ReloadlySettings,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.client = new ReloadlyClient(settings, log, now);
  }

  async procure(productId: string, qty: number, idempotencyKey: string): Promise<ProcureResult> {
    const product = this.settings.products[productId];
    if (!product)
      throw new SupplierPermanentError(`product ${productId} is not mapped to a Reloadly product (RELOADLY_PRODUCTS)`);
    const deadline = this.now() + CALL_BUDGET_MS;
    const tx = await this.order(product, qty, idempotencyKey, deadline);
    return this.settle(tx, product, qty, deadline);
  }

  /** The order's transaction: placed now, or the one already placed under this identifier. */
  private async order(
    product: ReloadlyProductMapping,
    qty: number,
    key: string,
    deadline: number,
  ): Promise<Transaction> {
    // Thrown from here (a rate limit, refused credentials) means the order was never taken.
    const answer = await this.client.call('POST', '/orders', deadline, {
      productId: product.productId,
      quantity: qty,
      unitPrice: Number(product.unitPrice),
      customIdentifier: key,
      senderName: this.settings.senderName,
    });
    if (answer.kind === 'ok') {
      const tx = transactionAnswer.safeParse(answer.body);
      if (tx.success) return tx.data;
      this.log.warn(
        { customIdentifier: key, status: answer.status },
        'reloadly order answer is not a transaction; looking the order up',
      );
      return this.existing(key, 'its answer to the order could not be read', deadline);
    }
    if (answer.kind === 'lost') return this.existing(key, `the order got no answer (${answer.why})`, deadline);
    if (answer.kind === 'unparseable') return this.existing(key, 'its answer to the order could not be read', deadline);
    const reason = reasonOf(answer.status, answer.error);
    if (answer.error?.errorCode === CUSTOM_IDENTIFIER_ALREADY_USED)
      return this.existing(key, 'the order was placed before', deadline);
    // After a 5xx (or a gateway's 408) the order may have been taken all the same.
    if (answer.status >= 500 || answer.status === 408)
      return this.existing(key, `the order failed: ${reason}`, deadline);
    // A refused order does not use up the identifier: nothing was bought.
    throw new SupplierPermanentError(`Reloadly refused the order: ${reason}`);
  }

  /**
   * The transaction placed under `key`, when Reloadly may have taken an order without our hearing
   * so. Not found (yet), or not findable now: ask again later under the same key.
   */
  private async existing(key: string, why: string, deadline: number): Promise<Transaction> {
    let found: Transaction | undefined;
    try {
      found = await this.lookUp(key, deadline);
    } catch (err) {
      throw inFlight(err, `Reloadly: ${why}, and the order could not be looked up`);
    }
    if (found) return found;
    throw new SupplierTransientError(
      `Reloadly: ${why}; no order under this identifier yet, asking again under the same one`,
      { inFlight: true },
    );
  }

  private async lookUp(key: string, deadline: number): Promise<Transaction | undefined> {
    const answer = await this.client.call(
      'GET',
      `/reports/transactions?customIdentifier=${encodeURIComponent(key)}&page=1&size=10`,
      deadline,
    );
    if (answer.kind !== 'ok')
      throw new SupplierTransientError(`Reloadly's transaction report failed (${describe(answer)})`);
    const page = transactionsPage.safeParse(answer.body);
    if (!page.success) {
      this.log.warn({ customIdentifier: key }, 'reloadly transaction report is not a list');
      throw new SupplierTransientError("Reloadly's transaction report could not be read");
    }
    // The filter is not trusted: only a transaction carrying our identifier is ours.
    const mine = page.data
      .map((item) => transactionAnswer.safeParse(item))
      .flatMap((t) => (t.success && t.data.customIdentifier === key ? [t.data] : []))
      .sort((a, b) => (BigInt(a.transactionId) < BigInt(b.transactionId) ? -1 : 1));
    if (mine.length > 1) {
      this.log.error(
        { customIdentifier: key, transactionIds: mine.map((t) => t.transactionId) },
        'reloadly holds several transactions under one identifier; taking the first',
      );
    }
    return mine[0];
  }

  /** What the transaction's status means for us: its cards, ask again later, or nothing ever. */
  private async settle(
    tx: Transaction,
    product: ReloadlyProductMapping,
    qty: number,
    deadline: number,
  ): Promise<ProcureResult> {
    const purchase = purchaseOf(tx, product, qty);
    const status = tx.status.toUpperCase();
    if (ENDED_WITHOUT_CARDS.has(status)) {
      throw new SupplierPermanentError(`Reloadly transaction ${tx.transactionId} ${status}: no cards were delivered`, {
        purchase,
      });
    }
    if (STILL_WORKING.has(status)) {
      throw new SupplierTransientError(`Reloadly transaction ${tx.transactionId} is ${status}; asking again later`, {
        inFlight: true,
        purchase,
      });
    }
    if (status !== SUCCESSFUL) {
      this.log.warn(
        { transactionId: tx.transactionId, status: tx.status.slice(0, 40) },
        'reloadly transaction has a status we do not know; asking again later',
      );
      throw new SupplierTransientError(
        `Reloadly transaction ${tx.transactionId} has an unknown status; asking again later`,
        { inFlight: true, purchase },
      );
    }
    try {
      return { codes: await this.cards(tx, purchase.quantity, deadline), purchase };
    } catch (err) {
      // Bought and paid for: whatever went wrong, the next call must find this transaction again.
      throw inFlight(
        err,
        `Reloadly transaction ${tx.transactionId} succeeded but its cards could not be read`,
        purchase,
      );
    }
  }

  private async cards(tx: Transaction, bought: number, deadline: number): Promise<string[]> {
    const answer = await this.client.call(
      'GET',
      `/orders/transactions/${encodeURIComponent(tx.transactionId)}/cards`,
      deadline,
    );
    if (answer.kind !== 'ok')
      throw new SupplierTransientError(
        `Reloadly's cards of transaction ${tx.transactionId} failed (${describe(answer)})`,
      );
    const cards = cardsAnswer.safeParse(answer.body);
    if (!cards.success) {
      this.log.warn({ transactionId: tx.transactionId }, 'reloadly cards answer is not a list of cards');
      throw new SupplierTransientError(`Reloadly's cards of transaction ${tx.transactionId} could not be read`);
    }
    const codes = cards.data.map(codeOf);
    const usable = codes.filter((c): c is string => c !== undefined);
    if (usable.length < codes.length) {
      this.log.error(
        { transactionId: tx.transactionId, unusable: codes.length - usable.length },
        'reloadly cards without a usable number; left for support',
      );
    }
    if (usable.length < bought) {
      this.log.warn(
        { transactionId: tx.transactionId, bought, cards: usable.length },
        'reloadly handed over fewer cards than bought',
      );
    }
    return usable;
  }
}

function describe(answer: { kind: string; status?: number; why?: string }): string {
  return answer.kind === 'lost' ? (answer.why ?? 'no answer') : `HTTP ${answer.status}`;
}

/** The error as a transient one that tells the caller to ask again under the same key. */
function inFlight(err: unknown, context: string, purchase?: SupplierPurchase): SupplierTransientError {
  const detail = err instanceof Error ? err.message : String(err);
  const retryAfterMs = err instanceof SupplierTransientError ? err.retryAfterMs : undefined;
  return new SupplierTransientError(`${context}: ${detail}`, { inFlight: true, purchase, retryAfterMs });
}

/** The transaction as our purchase record: its id, and what it cost us per unit (fees included). */
function purchaseOf(tx: Transaction, product: ReloadlyProductMapping, qty: number): SupplierPurchase {
  const quantity = tx.product?.quantity ?? qty;
  const total = typeof tx.amount === 'number' && Number.isFinite(tx.amount) ? decimal6(tx.amount) : null;
  return {
    supplier: SUPPLIER,
    supplierProductId: tx.product?.productId ?? String(product.productId),
    transactionId: tx.transactionId,
    supplierStatus: tx.status.slice(0, 32),
    quantity,
    totalCost: total,
    unitCost: total !== null && quantity > 0 ? divide6(total, quantity) : null,
    currency: tx.currencyCode?.slice(0, 8) ?? null,
    faceValue:
      typeof tx.product?.unitPrice === 'number'
        ? tx.product.unitPrice.toFixed(2)
        : Number(product.unitPrice).toFixed(2),
    faceCurrency: tx.product?.currencyCode?.slice(0, 8) ?? null,
  };
}
