import { ConfigError, type Config } from '../config';
import type { TemporalHandle } from '../temporal/client';
import { EvmPaymentProvider, type CheckoutBook } from './evm/provider';
import type { Orm } from '../db/orm';
import { createLogger } from '../logger';
import { NoSupplier, OperatorOnlyUpstream } from './none';
import { OperatorQueueUpstream } from './operators';
import type { PaymentProvider } from './payment-provider';
import { HttpRedemptionUpstream } from './http-upstream';
import type { RedemptionUpstream } from './redemption-upstream';
import { ReloadlySupplier } from './reloadly/reloadly-supplier';
import { reloadlySettings } from './reloadly/reloadly-settings';
import { SandboxPaymentClient } from './sandbox/sandbox-payment-client';
import { resetSandboxControl } from './sandbox/sandbox-payments';
import { SandboxSupplier, sandboxSupplierControl } from './sandbox/sandbox-supplier';
import type { Supplier } from './supplier';
import { SandboxRedemptionUpstream } from './sandbox/sandbox-upstream';

// The composition root of the outside world: which payment provider, supplier and redemption
// upstream this process talks to is decided here, once, from config. Everything else (activities,
// routers, pages) is handed these and never picks one itself.

export interface Providers {
  /** The hosted checkout: activities open and sync checkouts, the callback router verifies its callbacks. */
  payments: PaymentProvider;
  /** The same provider when it is the self-hosted EVM checkout: its watch activities and page use it. */
  evm?: EvmPaymentProvider;
  /** Gift-card procurement, for the procurement activities. */
  supplier: Supplier;
  /** Upstream redemption: the activities submit and poll, the API and the site pre-check sessions. */
  upstream: RedemptionUpstream;
  /** With REDEMPTION_UPSTREAM=sandbox, the partner this process plays under /sandbox-upstream (its scripts and tickets). */
  sandboxUpstream?: SandboxRedemptionUpstream;
}

/**
 * `evmCheckouts`: where the EVM adapter's port opens and reads its checkouts (the checkout's
 * service, which sits above the providers and is handed in by the caller).
 */
export function createProviders(deps: {
  orm: Orm;
  config: Config;
  temporal: TemporalHandle;
  evmCheckouts?: (evm: EvmPaymentProvider) => CheckoutBook;
}): Providers {
  const { config } = deps;
  configureSandboxes(config);
  const evm = config.PAYMENT_PROVIDER === 'evm' ? evmProvider(deps) : undefined;
  return {
    payments:
      evm ??
      new SandboxPaymentClient({
        baseUrl: config.paymentProviderUrl,
        secret: config.PAYMENT_CALLBACK_SECRET,
        timeoutMs: config.PAYMENT_PROVIDER_TIMEOUT_MS,
      }),
    evm,
    supplier: supplierOf(deps),
    upstream: upstreamOf(deps),
    sandboxUpstream: config.REDEMPTION_UPSTREAM === 'sandbox' ? new SandboxRedemptionUpstream() : undefined,
  };
}

function upstreamOf({ orm, config }: { orm: Orm; config: Config }): RedemptionUpstream {
  switch (config.REDEMPTION_UPSTREAM) {
    // The sandbox is served by the API under /sandbox-upstream and reached like a partner.
    case 'sandbox':
    case 'http':
      return new HttpRedemptionUpstream(
        {
          baseUrl: config.redemptionUpstreamUrl,
          secret: config.redemptionUpstreamSecret,
          timeoutMs: config.REDEMPTION_UPSTREAM_TIMEOUT_MS,
        },
        createLogger(config.LOG_LEVEL).child({ upstream: config.REDEMPTION_UPSTREAM }),
      );
    case 'operators':
      return new OperatorQueueUpstream(orm);
    case 'none':
      return new OperatorOnlyUpstream();
  }
}

function supplierOf({ orm, config }: { orm: Orm; config: Config }): Supplier {
  switch (config.SUPPLIER_PROVIDER) {
    case 'sandbox':
      return new SandboxSupplier(orm, sandboxSupplierControl);
    case 'reloadly':
      return reloadlySupplier(config);
    case 'none':
      return new NoSupplier();
  }
}

/** Reloadly's gift-card API; loadConfig has checked that the credentials and the product map are there. */
function reloadlySupplier(config: Config): ReloadlySupplier {
  if (!config.RELOADLY_CLIENT_ID || !config.RELOADLY_CLIENT_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  RELOADLY_CLIENT_ID, RELOADLY_CLIENT_SECRET: required with SUPPLIER_PROVIDER=reloadly',
    );
  }
  const settings = reloadlySettings({
    env: config.RELOADLY_ENV,
    clientId: config.RELOADLY_CLIENT_ID,
    clientSecret: config.RELOADLY_CLIENT_SECRET,
    authUrl: config.RELOADLY_AUTH_URL,
    apiUrl: config.RELOADLY_API_URL,
    timeoutMs: config.RELOADLY_TIMEOUT_MS,
    senderName: config.RELOADLY_SENDER_NAME,
    products: config.reloadlyProducts,
  });
  return new ReloadlySupplier(settings, createLogger(config.LOG_LEVEL).child({ supplier: 'reloadly' }));
}

function evmProvider(deps: {
  config: Config;
  evmCheckouts?: (evm: EvmPaymentProvider) => CheckoutBook;
}): EvmPaymentProvider {
  if (deps.config.evmChains.length === 0) {
    throw new ConfigError(
      'Invalid configuration:\n  EVM_CHAINS: required with PAYMENT_PROVIDER=evm (the chains a payer may pay on, see the README)',
    );
  }
  if (!deps.evmCheckouts)
    throw new Error('PAYMENT_PROVIDER=evm needs the checkout service (createProviders: evmCheckouts)');
  return new EvmPaymentProvider({ config: deps.config, chains: deps.config.evmChains, book: deps.evmCheckouts });
}

/**
 * The built-in sandboxes are process-wide (tests steer them in-process); the SANDBOX_* settings
 * script them here, at start. Unset settings leave them as they are, so a second service started
 * in a test's process does not undo what the test scripted.
 */
function configureSandboxes(config: Config): void {
  if (config.SANDBOX_SUPPLIER_SCRIPT) sandboxSupplierControl.load(config.SANDBOX_SUPPLIER_SCRIPT);
  if (config.SANDBOX_PAYMENT_FAULT !== 'none' || config.SANDBOX_CALLBACK_DELAY_MS > 0) resetSandboxControl(config);
}
