import { evmCheckout, evmTransfers } from '../../src/db/evm-store';
import { tronAddress } from '../../src/providers/evm/tron';
import type { DevChain } from './evm-chain';
import { evmChainsEnv } from './evm-chain';
import type { Harness } from './harness';
import { PAYMENT_ENV, checkoutIdOf } from './payments';

/** The service on PAYMENT_PROVIDER=evm against `chain`, with the payment loop's durations in seconds. */
export function evmEnv(
  chain: DevChain,
  opts: { confirmations?: number; rpcUrls?: string[] } = {},
): Record<string, string> {
  return {
    ...PAYMENT_ENV,
    PAYMENT_PROVIDER: 'evm',
    EVM_CHAINS: evmChainsEnv(chain, { confirmations: opts.confirmations ?? 2, rpcUrls: opts.rpcUrls }),
    EVM_RPC_TIMEOUT_MS: '1500',
    // Each watch counts every second on its own too: several tests use its steps as their clock.
    EVM_WATCH_FALLBACK_SECONDS: '1',
  };
}

/** The deposit address behind a checkout URL, as Postgres holds it. */
export async function depositAddressOf(h: Harness, checkoutUrl: string): Promise<`0x${string}`> {
  const row = await evmCheckout(h.services.orm.em.fork(), checkoutIdOf(checkoutUrl));
  if (!row) throw new Error('no such checkout');
  return row.address;
}

export async function transfersOf(h: Harness, checkoutUrl: string) {
  return evmTransfers(h.services.orm.em.fork(), checkoutIdOf(checkoutUrl));
}

/** Token units for a Decimal amount of a 6-decimal stablecoin. */
export const units6 = (amount: string) => BigInt(Math.round(Number(amount) * 100)) * 10_000n;

/**
 * The service on PAYMENT_PROVIDER=evm with one TRON chain: `rpcUrl` (the java-tron fake in front
 * of `chain`), USDT given as T…, counted by finality (its default), with a TronGrid API key.
 */
export function tronEnv(chain: DevChain, rpcUrl: string, opts: { apiKey?: string } = {}): Record<string, string> {
  const tron = {
    kind: 'tron',
    chainId: 728126428,
    name: 'TRON',
    rpcUrls: [rpcUrl],
    apiKey: opts.apiKey ?? 'test-trongrid-key',
    tokens: { USDT: { address: tronAddress(chain.tokens.USDT.address), decimals: 6 } },
  };
  return {
    ...PAYMENT_ENV,
    PAYMENT_PROVIDER: 'evm',
    EVM_CHAINS: JSON.stringify([tron]),
    EVM_RPC_TIMEOUT_MS: '1500',
    EVM_WATCH_FALLBACK_SECONDS: '1',
  };
}

/** A checkout's TRON deposit address, in the hex the chain (and Hardhat behind the fake) takes. */
export async function tronDepositOf(h: Harness, checkoutUrl: string): Promise<`0x${string}`> {
  const row = await evmCheckout(h.services.orm.em.fork(), checkoutIdOf(checkoutUrl));
  if (!row?.tron_address) throw new Error('no TRON address for this checkout');
  return row.tron_address;
}
