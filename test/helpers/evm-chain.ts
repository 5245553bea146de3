// The local EVM chain (src/dev/evm-chain.ts) as tests use it, and the EVM_CHAINS setting that
// points the service at it.
import type { DevChain } from '../../src/dev/evm-chain';

export { startDevChain, type DevChain, type DevChainToken } from '../../src/dev/evm-chain';

export interface ChainSettingOptions {
  /** Replaces the chain's own URL, e.g. with a proxy in front of it or a dead endpoint ahead of it for failover tests. */
  rpcUrls?: string[];
  /** Default 2; unused with `finality`. */
  confirmations?: number;
  finality?: 'finalized';
  verifyWith?: string;
  name?: string;
}

/** One chain of EVM_CHAINS, accepting USDT and USDC on `chain`. */
export function evmChainSetting(chain: DevChain, opts: ChainSettingOptions = {}) {
  const token = (t: DevChain['tokens']['USDT']) => ({ address: t.address, decimals: t.decimals });
  return {
    chainId: chain.chainId,
    name: opts.name ?? 'Hardhat',
    rpcUrls: opts.rpcUrls ?? [chain.rpcUrl],
    ...(opts.finality ? { finality: opts.finality } : { confirmations: opts.confirmations ?? 2 }),
    ...(opts.verifyWith ? { verifyWith: opts.verifyWith } : {}),
    tokens: { USDT: token(chain.tokens.USDT), USDC: token(chain.tokens.USDC) },
  };
}

/** EVM_CHAINS (JSON) for a service that accepts USDT and USDC on `chain`. */
export function evmChainsEnv(chain: DevChain, opts: ChainSettingOptions = {}): string {
  return JSON.stringify([evmChainSetting(chain, opts)]);
}
