// The local EVM chain (src/dev/evm-chain.ts) as tests use it, and the EVM_CHAINS setting that
// points the service at it.
import type { DevChain } from '../../src/dev/evm-chain';

export { startDevChain, type DevChain, type DevChainToken } from '../../src/dev/evm-chain';

/**
 * EVM_CHAINS (JSON) for a service that accepts USDT and USDC on `chain`. `rpcUrls` replaces the
 * chain's own URL, e.g. with a proxy in front of it or a dead endpoint ahead of it for failover tests.
 */
export function evmChainsEnv(chain: DevChain, opts: { confirmations?: number; rpcUrls?: string[] } = {}): string {
  const token = (t: DevChain['tokens']['USDT']) => ({ address: t.address, decimals: t.decimals });
  return JSON.stringify([{
    chainId: chain.chainId,
    name: 'Hardhat',
    rpcUrls: opts.rpcUrls ?? [chain.rpcUrl],
    confirmations: opts.confirmations ?? 2,
    tokens: { USDT: token(chain.tokens.USDT), USDC: token(chain.tokens.USDC) },
  }]);
}
