// Settings a production start needs besides its secrets: no sandbox for any outside party.

/** An operator's xpub at m/44'/60'/0' (of the BIP39 test mnemonic, so only for tests): not the built-in development one. */
export const OPERATOR_XPUB =
  'xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt';

const CHAINS = [
  {
    chainId: 137,
    name: 'Polygon',
    rpcUrls: ['https://polygon-rpc.invalid/key'],
    confirmations: 12,
    tokens: { USDT: { address: '0xc2132D05D31c914a87C6611C10748AEb04B58e8F', decimals: 6 } },
  },
];

export const REAL_PROVIDERS = {
  // Production serves /metrics only on a port of its own (a config that only loadConfig reads).
  METRICS_PORT: '9464',
  PAYMENT_PROVIDER: 'evm',
  EVM_XPUB: OPERATOR_XPUB,
  EVM_CHAINS: JSON.stringify(CHAINS),
  SUPPLIER_PROVIDER: 'none',
  REDEMPTION_UPSTREAM: 'none',
};
