import { evmCheckout, evmTransfers } from '../../src/db/evm-store';
import type { DevChain } from './evm-chain';
import { evmChainsEnv } from './evm-chain';
import type { Harness } from './harness';
import { PAYMENT_ENV, checkoutIdOf } from './payments';

/** The service on PAYMENT_PROVIDER=evm against `chain`, with the payment loop's durations in seconds. */
export function evmEnv(chain: DevChain, opts: { confirmations?: number; rpcUrls?: string[] } = {}): Record<string, string> {
  return {
    ...PAYMENT_ENV,
    PAYMENT_PROVIDER: 'evm',
    EVM_CHAINS: evmChainsEnv(chain, { confirmations: opts.confirmations ?? 2, rpcUrls: opts.rpcUrls }),
    EVM_RPC_TIMEOUT_MS: '1500',
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
