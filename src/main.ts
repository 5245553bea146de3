// `npm start`: the whole service on one machine with nothing installed beforehand.
import { ConfigError, loadConfig } from './config';
import { startInfrastructure } from './dev/stack';
import { createLogger } from './logger';
import { prepareDemo, startServices } from './bootstrap';
import { API_PREFIX } from './http/api-prefix';
import { logUnhandledRejections, onShutdownSignal } from './processes';
import { freeLoopbackPort, installRuntime } from './temporal/runtime';
import { codecEndpoint } from './http/routers/codec-router';
import { ensureStateSecrets } from './dev/state-secrets';

async function main() {
  // A developer tries webhooks on this machine: loopback http:// receivers are admitted here
  // (never in production, which refuses the setting), unless WEBHOOK_ALLOW_INSECURE_URLS says otherwise.
  // It also makes its own payload key and codec token once (under STATE_DIR) and points the
  // Temporal UI's codec endpoint at this service.
  const development = process.env.NODE_ENV !== 'production';
  const state = development ? ensureStateSecrets(process.env.STATE_DIR || '.state') : {};
  // An empty variable counts as unset, so it must not hide the key and token kept under STATE_DIR.
  const given = Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined && v !== ''));
  const loaded = loadConfig({ ...(development ? { WEBHOOK_ALLOW_INSECURE_URLS: 'true', ...state } : {}), ...given });
  const config = {
    ...loaded,
    TEMPORAL_UI_ORIGIN:
      loaded.TEMPORAL_UI_ORIGIN ?? (development ? `http://127.0.0.1:${loaded.TEMPORAL_UI_PORT}` : undefined),
  };
  const logger = createLogger(config.LOG_LEVEL);
  logUnhandledRejections(logger);
  installRuntime({ logger, coreMetricsPort: config.TEMPORAL_CORE_METRICS_PORT ?? (await freeLoopbackPort()) });
  const say = (msg: string) => process.stdout.write(`${msg}\n`);
  const infra = await startInfrastructure(config, say);
  const services = await startServices({
    config: { ...config, evmChains: infra.evmChains ?? config.evmChains },
    logger,
    databaseUrl: infra.databaseUrl,
    temporalAddress: infra.temporalAddress,
    registerSearchAttributes: !infra.ownTemporal,
    api: true,
    worker: true,
  });
  const demo = await prepareDemo(services.orm, config);
  say('');
  say(
    `Wholesale API    ${config.publicBaseUrl}${API_PREFIX}  (OpenAPI: ${config.publicBaseUrl}${API_PREFIX}/openapi.json)`,
  );
  say(`API reference    ${config.publicBaseUrl}${API_PREFIX}/docs`);
  if (infra.temporalKind === 'server') {
    say(
      `Temporal         production server ${infra.temporalAddress} on Postgres (DEV_TEMPORAL=server); no Web UI in this mode, use the temporal CLI`,
    );
  } else {
    say(`Temporal UI      ${infra.temporalUiUrl ?? `(external Temporal at ${infra.temporalAddress})`}`);
  }
  if (config.CODEC_TOKEN) {
    // The development token npm start made is printed like the demo key; a token the operator set never is.
    const token =
      'CODEC_TOKEN' in state && state.CODEC_TOKEN === config.CODEC_TOKEN ? config.CODEC_TOKEN : '$CODEC_TOKEN';
    say(`Codec endpoint   ${codecEndpoint(config)}  (the token goes in the Authorization header, never in the URL)`);
    say(
      `                 CLI: temporal workflow show --codec-endpoint ${codecEndpoint(config)} --codec-auth "Bearer ${token}" -w <id>`,
    );
    say(
      '                 Temporal UI: sends the token only to an https:// endpoint, with "Pass the user access token" on (docs/operations.md)',
    );
  }
  say(`Account area     ${config.publicBaseUrl}/account`);
  if (infra.evmChains) {
    say(
      `Local EVM chain  ${infra.evmChains[0].rpcUrls[0]} (chain ${infra.evmChains[0].chainId}, USDT and USDC test tokens, 2 confirmations)`,
    );
    say(
      '                 pay a checkout as a wallet would:  npx wholesale dev-chain pay CHECKOUT_ID [--amount 12.34] [--token USDC]',
    );
  }
  say(`Demo sign-in     ${demo.email}  password: ${demo.password}`);
  say(`Demo account     ${demo.accountId}`);
  say(`Demo API key     ${demo.apiKey}`);
  if (config.WEBHOOK_ALLOW_INSECURE_URLS) {
    say(
      'Webhooks         loopback http:// receivers are allowed here (development); try:  npx wholesale webhooks listen',
    );
  }
  say(`Try:  curl -H "Authorization: Bearer ${demo.apiKey}" ${config.publicBaseUrl}${API_PREFIX}/products`);
  say('');

  onShutdownSignal(async (signal) => {
    logger.info({ signal }, 'shutting down');
    await services.stop();
    await infra.stop();
    process.exit(0);
  });
}

main().catch((err) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : (err?.stack ?? err)}\n`);
  process.exit(1);
});
