import { randomBytes } from 'node:crypto';
import type { HDKey } from '@scure/bip32';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import { evmChainScans, evmCheckout, evmCheckoutAt, insertEvmCheckout, nextDerivationIndex, checkoutsToScan, saveEvmChainScan } from '../../db/evm-store';
import type { Orm } from '../../db/orm';
import { OrderSchema } from '../../db/entities';
import { paymentProviderErrors } from '../../metrics/registry';
import { settleCheckout, type CheckoutSettlement } from '../../services/evm-checkouts';
import { addressOn, ClosingNotReadyError, rescanBeforeClosing, scanCheckout, scanCheckoutsOn } from '../../services/evm-scan';
import type { TemporalHandle } from '../../temporal/client';
import { notifyPaid } from '../../temporal/payment-notices';
import { evmCheckoutScannedSignal, evmCheckoutWorkflowId, type ChainScanTick, type SettlePhase } from '../../contracts/evm-checkouts';
import { evmCheckoutStarter } from '../../temporal/starters';
import { depositAddress, receivingKey } from './addresses';
import { providerError, type Checkout, type CheckoutRequest, type PaymentCallback, type PaymentProvider, type PaymentStatus } from '../payments';
import { ChainRpc, ChainUnavailableError, type ChainHealth } from './rpc';
import type { ChainSettings } from './settings';

// PAYMENT_PROVIDER=evm: the hosted checkout is ours. A checkout is a fresh deposit address derived
// from the operator's xpub and a watch workflow that follows it on every configured chain; the
// payer pays on the page at /checkout/<id> (src/pages/evm-checkout.ts). No callback ever arrives:
// the watch tells the order's workflow itself, and a status sync reads what the watch recorded.

/**
 * The settle step's activity has 30 s (workflows/activity-options.ts): the rescan before closing
 * stops well within it, and its next try goes on where it stopped.
 */
const CLOSING_RESCAN_BUDGET_MS = 15_000;
/** Past its payment window, a checkout whose order never committed is no longer read (its watch has ended). */
const UNCOMMITTED_SLACK_SECONDS = 300;
/** A chain whose scanner has not ticked for this many sync periods counts as unavailable to its watches. */
const STALE_TICKS = 5;

export interface ChainStatus {
  chainId: number;
  name: string;
  /** `unverified`: the tokens' decimals() have not been read yet, so nothing on the chain is credited. */
  state: ChainHealth | 'unverified';
}

export class EvmPaymentProvider implements PaymentProvider {
  /** No provider calls us back: no request carries this header's signature. */
  readonly signatureHeader = 'x-no-payment-callbacks';
  readonly rpcs: ChainRpc[];
  private readonly key: HDKey;
  /** TRON_XPUB's receiving key, when EVM_CHAINS has a TRON chain: each checkout gets its TRON address too. */
  private readonly tronKey?: HDKey;
  private readonly orm: Orm;
  private readonly config: Config;
  private readonly temporal: TemporalHandle;
  /** Chains whose tokens' decimals() were read and match the configuration. */
  private readonly decimalsRead = new Set<number>();

  constructor(deps: { orm: Orm; config: Config; temporal: TemporalHandle; chains: ChainSettings[] }) {
    this.orm = deps.orm;
    this.config = deps.config;
    this.temporal = deps.temporal;
    this.key = receivingKey(deps.config.EVM_XPUB);
    if (deps.chains.some((c) => c.kind === 'tron')) this.tronKey = receivingKey(deps.config.TRON_XPUB, 195);
    const opts = { timeoutMs: deps.config.EVM_RPC_TIMEOUT_MS, headStallSeconds: deps.config.EVM_HEAD_STALL_SECONDS, logRangeBlocks: deps.config.EVM_LOG_RANGE_BLOCKS };
    this.rpcs = deps.chains.map((chain, index) => new ChainRpc(chain, opts, { index }));
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
    const tronAddress = this.tronKey && depositAddress(this.tronKey, index);
    await insertEvmCheckout(em, { id, reference: req.reference, derivationIndex: index, address: depositAddress(this.key, index), tronAddress, amount: req.amount, currency: req.currency });
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

  /**
   * The watch's scan: every chain asked, what it shows recorded and confirmed. A chain whose
   * tokens' decimals() were not read yet is not scanned (its amounts could be read wrong by orders
   * of magnitude): it counts as unavailable, and its decimals are asked again.
   */
  async scan(depositIndex: number): Promise<{ unavailable: number[] }> {
    const em = this.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout || checkout.state === 'closed') return { unavailable: [] };
    const ready: ChainRpc[] = [];
    const unverified: number[] = [];
    for (const rpc of this.rpcs) {
      if (await this.tokensVerified(rpc)) ready.push(rpc);
      else unverified.push(rpc.chain.chainId);
    }
    const { unavailable } = await scanCheckout(em, checkout, ready);
    return { unavailable: [...unverified, ...unavailable] };
  }

  /**
   * One tick of the chain's scanner: every checkout not closed whose address is on the chain, read
   * at once (ceil(N / EVM_SCAN_ADDRESSES_PER_CALL) eth_getLogs per block range), then the watches
   * of those whose transfers moved are woken to count them now. With no open checkout it asks no
   * node. How it went is kept for the watches' `unavailableFor` and /readyz.
   */
  async scanChain(chainId: number): Promise<ChainScanTick> {
    const nextInSeconds = this.config.PAYMENT_SYNC_SECONDS;
    const rpc = this.rpcs.find((r) => r.chain.chainId === chainId);
    if (!rpc) return { checkouts: 0, woken: 0, available: false, nextInSeconds, retired: true };
    const em = this.orm.em.fork();
    // An uncommitted checkout is read for as long as its order could still commit and be paid.
    const open = (await checkoutsToScan(em, this.config.PAYMENT_WINDOW_SECONDS + UNCOMMITTED_SLACK_SECONDS)).filter((c) => addressOn(c, rpc.chain));
    const tick = { checkouts: open.length, woken: 0, available: true, nextInSeconds, retired: false };
    let touched = new Set<string>();
    if (open.length > 0) {
      try {
        if (!(await this.tokensVerified(rpc))) tick.available = false;
        else touched = await scanCheckoutsOn(em, rpc, open, this.config.EVM_SCAN_ADDRESSES_PER_CALL);
      } catch (err) {
        if (!(err instanceof ChainUnavailableError)) throw err;
        tick.available = false;
      }
    }
    await saveEvmChainScan(em, { chainId, checkouts: open.length, available: tick.available });
    for (const checkout of open.filter((c) => touched.has(c.id))) if (await this.wake(checkout.reference, checkout.derivation_index)) tick.woken++;
    return tick;
  }

  /**
   * The chains this checkout's address is read on whose scanner's last tick could not read them,
   * or that have not been read for several ticks (their scanner stopped or failing).
   */
  async unavailableFor(depositIndex: number): Promise<{ unavailable: number[] }> {
    const em = this.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout || checkout.state === 'closed') return { unavailable: [] };
    const scans = new Map((await evmChainScans(em)).map((s) => [s.chain_id, s]));
    const staleMs = STALE_TICKS * this.config.PAYMENT_SYNC_SECONDS * 1000;
    const unavailable = this.chains.filter((chain) => {
      const scan = scans.get(chain.chainId);
      return addressOn(checkout, chain) && scan && (!scan.available || Number(scan.age_ms) > staleMs);
    });
    return { unavailable: unavailable.map((c) => c.chainId) };
  }

  /** Wakes the checkout's watch; false when it is not running (closed, or not started yet). A wake is a hint: its step comes anyway. */
  private async wake(orderId: string, depositIndex: number): Promise<boolean> {
    try {
      await this.temporal.client.workflow.getHandle(evmCheckoutWorkflowId(orderId, depositIndex)).signal(evmCheckoutScannedSignal);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Counts what is confirmed. Before closing, the address is read again on every chain from the
   * checkout's start block; the closing step fails (and is retried) until that is done.
   */
  async settle(depositIndex: number, phase: SettlePhase): Promise<CheckoutSettlement> {
    const em = this.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout) throw new Error(`no checkout at deposit index ${depositIndex}`);
    if (phase === 'closing' && checkout.state !== 'closed') {
      for (const rpc of this.rpcs) {
        if (!(await this.tokensVerified(rpc))) throw new ClosingNotReadyError(`chain ${rpc.chain.chainId}: its tokens' decimals() are not read yet`);
      }
      await rescanBeforeClosing(em, checkout, this.rpcs, Date.now() + CLOSING_RESCAN_BUDGET_MS);
    }
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
        const verified = state !== 'down' && (await this.tokensVerified(rpc));
        return { chainId: rpc.chain.chainId, name: rpc.chain.name, state: state === 'down' || verified ? state : 'unverified' };
      }),
    );
  }

  /** True once the chain's tokens' decimals() were read and match; asked again while not. */
  private async tokensVerified(rpc: ChainRpc): Promise<boolean> {
    if (this.decimalsRead.has(rpc.chain.chainId)) return true;
    try {
      return (await this.readDecimals(rpc)).length === 0;
    } catch (err) {
      if (err instanceof ChainUnavailableError) return false;
      throw err;
    }
  }

  /** Each token's decimals() on the chain against the configuration: what does not match. */
  private async readDecimals(rpc: ChainRpc): Promise<string[]> {
    const mismatches: string[] = [];
    for (const [symbol, token] of Object.entries(rpc.chain.tokens)) {
      if (!token) continue;
      const actual = await rpc.decimals(token.address);
      if (actual !== token.decimals) {
        mismatches.push(`  EVM_CHAINS: ${symbol} on ${rpc.chain.name} (chain ${rpc.chain.chainId}) has ${actual} decimals on chain, ${token.decimals} configured`);
      }
    }
    if (mismatches.length === 0) this.decimalsRead.add(rpc.chain.chainId);
    return mismatches;
  }

  /**
   * What stops the start: an RPC URL (or verifyWith) that answers another chain id, named by its
   * place in EVM_CHAINS, and a token whose decimals() differ from the configuration (amounts would
   * be credited wrong by orders of magnitude). A node or chain that cannot be reached now is only
   * logged: a node is asked for its chain id before it ever serves, and a chain whose decimals
   * were not read is degraded and credits nothing until a later scan has read them.
   */
  async verifyTokens(logger: Logger): Promise<string[]> {
    const problems: string[] = [];
    for (const rpc of this.rpcs) {
      const { chainId } = rpc.chain;
      const { wrongChain, unreachable } = await rpc.checkNodes();
      for (const w of wrongChain) problems.push(`  ${w.position}: answers chain ${w.answered}, not ${chainId} as configured`);
      if (unreachable.length > 0) logger.warn({ chainId, nodes: unreachable }, 'cannot ask these JSON-RPC nodes for their chain id now; each is asked before it serves');
      if (wrongChain.length > 0) continue;
      try {
        problems.push(...(await this.readDecimals(rpc)));
      } catch (err) {
        if (!(err instanceof ChainUnavailableError)) throw err;
        logger.warn({ chainId }, "cannot read the tokens' decimals() now: the chain is degraded and credits nothing until a scan has read them");
      }
    }
    return problems;
  }
}
