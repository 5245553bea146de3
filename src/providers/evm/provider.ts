import type { HDKey } from '@scure/bip32';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import { depositAddress, receivingKey } from './addresses';
import type { Checkout, CheckoutRequest, PaymentCallback, PaymentProvider, PaymentStatus } from '../payment-provider';
import { ChainRpc, ChainUnavailableError, type ChainHealth } from './rpc';
import type { ChainSettings } from './evm-settings';

// PAYMENT_PROVIDER=evm: the hosted checkout is ours. This adapter is its chain client (the chains'
// nodes, the tokens' decimals, the deposit addresses from the operator's xpub) and the payment
// port; the checkout's lifecycle (opening it with its watch, the chain scanners' ticks, the
// watch's steps) is src/services/payments/evm-checkout-watch.ts, handed to the port as its `book`. The
// payer pays on the page at /checkout/<id> (src/pages/evm-checkout.ts). No callback ever arrives:
// the watch tells the order's workflow itself, and a status sync reads what the watch recorded.

/** Where the port's checkouts are opened and read (the service, wired by the composition root). */
export interface CheckoutBook {
  open(req: CheckoutRequest): Promise<Checkout>;
  status(checkoutId: string): Promise<PaymentStatus>;
}

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
  private readonly book: CheckoutBook;
  /** Chains whose tokens' decimals() were read and match the configuration. */
  private readonly decimalsRead = new Set<number>();

  constructor(deps: { config: Config; chains: ChainSettings[]; book: (evm: EvmPaymentProvider) => CheckoutBook }) {
    this.book = deps.book(this);
    this.key = receivingKey(deps.config.EVM_XPUB);
    if (deps.chains.some((c) => c.kind === 'tron')) this.tronKey = receivingKey(deps.config.TRON_XPUB, 195);
    const opts = {
      timeoutMs: deps.config.EVM_RPC_TIMEOUT_MS,
      headStallSeconds: deps.config.EVM_HEAD_STALL_SECONDS,
      logRangeBlocks: deps.config.EVM_LOG_RANGE_BLOCKS,
    };
    this.rpcs = deps.chains.map((chain, index) => new ChainRpc(chain, opts, { index }));
  }

  get chains(): ChainSettings[] {
    return this.rpcs.map((r) => r.chain);
  }

  /** The deposit addresses at a derivation index: on the EVM chains, and on TRON when one is configured. */
  depositAddresses(index: number): { address: `0x${string}`; tronAddress?: `0x${string}` } {
    return {
      address: depositAddress(this.key, index),
      ...(this.tronKey ? { tronAddress: depositAddress(this.tronKey, index) } : {}),
    };
  }

  createCheckout(req: CheckoutRequest): Promise<Checkout> {
    return this.book.open(req);
  }

  getStatus(checkoutId: string): Promise<PaymentStatus> {
    return this.book.status(checkoutId);
  }

  verifyCallback(): PaymentCallback | undefined {
    return undefined;
  }

  /** Each chain's nodes asked now (head within EVM_RPC_TIMEOUT_MS): for /readyz's degraded list. */
  async health(): Promise<ChainStatus[]> {
    return Promise.all(
      this.rpcs.map(async (rpc) => {
        const state = await rpc.head().then(
          () => rpc.health,
          () => 'down' as const,
        );
        const verified = state !== 'down' && (await this.tokensVerified(rpc));
        return {
          chainId: rpc.chain.chainId,
          name: rpc.chain.name,
          state: state === 'down' || verified ? state : 'unverified',
        };
      }),
    );
  }

  /**
   * True once the chain's tokens' decimals() were read and match; asked again while not. Nothing on
   * a chain is scanned or credited before.
   */
  async tokensVerified(rpc: ChainRpc): Promise<boolean> {
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
        mismatches.push(
          `  EVM_CHAINS: ${symbol} on ${rpc.chain.name} (chain ${rpc.chain.chainId}) has ${actual} decimals on chain, ${token.decimals} configured`,
        );
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
      for (const w of wrongChain)
        problems.push(`  ${w.position}: answers chain ${w.answered}, not ${chainId} as configured`);
      if (unreachable.length > 0)
        logger.warn(
          { chainId, nodes: unreachable },
          'cannot ask these JSON-RPC nodes for their chain id now; each is asked before it serves',
        );
      if (wrongChain.length > 0) continue;
      try {
        problems.push(...(await this.readDecimals(rpc)));
      } catch (err) {
        if (!(err instanceof ChainUnavailableError)) throw err;
        logger.warn(
          { chainId },
          "cannot read the tokens' decimals() now: the chain is degraded and credits nothing until a scan has read them",
        );
      }
    }
    return problems;
  }
}
