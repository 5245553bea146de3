import { randomBytes } from 'node:crypto';
import type { HDKey } from '@scure/bip32';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import { evmCheckout, evmCheckoutAt, insertEvmCheckout, nextDerivationIndex } from '../../db/evm-store';
import type { Orm } from '../../db/orm';
import { OrderSchema } from '../../db/entities';
import { paymentProviderErrors } from '../../metrics/registry';
import { scanCheckout, settleCheckout, type CheckoutSettlement } from '../../services/evm-checkouts';
import type { TemporalHandle } from '../../temporal/client';
import { notifyPaid } from '../../temporal/payment-notices';
import type { SettlePhase } from '../../contracts/evm-checkouts';
import { evmCheckoutStarter } from '../../temporal/starters';
import { depositAddress, receivingKey } from './addresses';
import { providerError, type Checkout, type CheckoutRequest, type PaymentCallback, type PaymentProvider, type PaymentStatus } from '../payments';
import { ChainRpc, type ChainHealth } from './rpc';
import type { ChainSettings } from './settings';

// PAYMENT_PROVIDER=evm: the hosted checkout is ours. A checkout is a fresh deposit address derived
// from the operator's xpub and a watch workflow that follows it on every configured chain; the
// payer pays on the page at /checkout/<id> (src/pages/evm-checkout.ts). No callback ever arrives:
// the watch tells the order's workflow itself, and a status sync reads what the watch recorded.

export interface ChainStatus {
  chainId: number;
  name: string;
  state: ChainHealth;
}

export class EvmPaymentProvider implements PaymentProvider {
  /** No provider calls us back: no request carries this header's signature. */
  readonly signatureHeader = 'x-no-payment-callbacks';
  readonly rpcs: ChainRpc[];
  private readonly key: HDKey;
  private readonly orm: Orm;
  private readonly config: Config;
  private readonly temporal: TemporalHandle;

  constructor(deps: { orm: Orm; config: Config; temporal: TemporalHandle; chains: ChainSettings[] }) {
    this.orm = deps.orm;
    this.config = deps.config;
    this.temporal = deps.temporal;
    this.key = receivingKey(deps.config.EVM_XPUB);
    const opts = { timeoutMs: deps.config.EVM_RPC_TIMEOUT_MS, headStallSeconds: deps.config.EVM_HEAD_STALL_SECONDS, logRangeBlocks: deps.config.EVM_LOG_RANGE_BLOCKS };
    this.rpcs = deps.chains.map((chain) => new ChainRpc(chain, opts));
  }

  get chains(): ChainSettings[] {
    return this.rpcs.map((r) => r.chain);
  }

  /**
   * A new deposit address (its derivation index is handed out once, ever) and its watch. A watch
   * that cannot be started is the provider failing: the order is not created, the caller retries.
   */
  async createCheckout(req: CheckoutRequest): Promise<Checkout> {
    const em = this.orm.em.fork();
    const index = await nextDerivationIndex(em);
    const id = `chk_${randomBytes(24).toString('base64url')}`;
    await insertEvmCheckout(em, { id, reference: req.reference, derivationIndex: index, address: depositAddress(this.key, index), amount: req.amount, currency: req.currency });
    try {
      await evmCheckoutStarter(this.temporal, this.config, { orderId: req.reference, depositIndex: index }).start();
    } catch {
      paymentProviderErrors.inc({ call: 'create', kind: 'error' });
      throw providerError();
    }
    return { checkoutId: id, checkoutUrl: `${this.config.publicBaseUrl}/checkout/${id}` };
  }

  /** What the watch recorded: paid once confirmed money reached the amount. */
  async getStatus(checkoutId: string): Promise<PaymentStatus> {
    const row = await evmCheckout(this.orm.em.fork(), checkoutId);
    if (!row?.paid_at) return { status: 'pending' };
    return { status: 'paid', paidAt: Math.floor(new Date(row.paid_at).getTime() / 1000) };
  }

  verifyCallback(): PaymentCallback | undefined {
    return undefined;
  }

  /** The watch's scan: every chain asked, what it shows recorded and confirmed. */
  async scan(depositIndex: number): Promise<{ unavailable: number[] }> {
    const em = this.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout || checkout.state === 'closed') return { unavailable: [] };
    return scanCheckout(em, checkout, this.rpcs);
  }

  async settle(depositIndex: number, phase: SettlePhase): Promise<CheckoutSettlement> {
    const em = this.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout) throw new Error(`no checkout at deposit index ${depositIndex}`);
    return settleCheckout(em, checkout.id, { levelThresholds: this.config.LEVEL_THRESHOLDS, phase });
  }

  /** Tells the checkout's order workflow that it was paid (signal-with-start, like a callback). */
  async notifyPaid(depositIndex: number): Promise<void> {
    const em = this.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    const order = checkout && (await em.findOne(OrderSchema, { id: checkout.reference }));
    if (order && (order.status === 'pending' || order.status === 'expired')) await notifyPaid(this.temporal, this.config, order);
  }

  /** Each chain's nodes asked now (head within EVM_RPC_TIMEOUT_MS): for /readyz's degraded list. */
  async health(): Promise<ChainStatus[]> {
    return Promise.all(
      this.rpcs.map(async (rpc) => {
        const state = await rpc.head().then(() => rpc.health, () => 'down' as const);
        return { chainId: rpc.chain.chainId, name: rpc.chain.name, state };
      }),
    );
  }

  /**
   * Each token's decimals() as the chain reports it, against the configuration: a mismatch would
   * credit amounts wrong by orders of magnitude, so it stops the start. A chain that cannot be
   * reached now is only logged: it is asked again by every scan.
   */
  async verifyTokens(logger: Logger): Promise<string[]> {
    const mismatches: string[] = [];
    for (const rpc of this.rpcs) {
      for (const [symbol, token] of Object.entries(rpc.chain.tokens)) {
        if (!token) continue;
        try {
          const actual = await rpc.decimals(token.address);
          if (actual !== token.decimals) {
            mismatches.push(`  EVM_CHAINS: ${symbol} on ${rpc.chain.name} (chain ${rpc.chain.chainId}) has ${actual} decimals on chain, ${token.decimals} configured`);
          }
        } catch {
          logger.warn({ chainId: rpc.chain.chainId, token: symbol }, 'cannot read the token decimals now; the chain is unreachable, start goes on');
        }
      }
    }
    return mismatches;
  }
}
