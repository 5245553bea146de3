// `npm start`: the whole service on one machine with nothing installed beforehand.
import { ConfigError, loadConfig } from './config';
import { startInfrastructure } from './dev/stack';
import { createLogger } from './logger';
import { prepareDemo, startServices } from './bootstrap';
import { API_PREFIX } from './http/app';
import { onShutdownSignal } from './processes';

async function main() {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const say = (msg: string) => process.stdout.write(`${msg}\n`);
  const infra = await startInfrastructure(config, say);
  const services = await startServices({
    config,
    logger,
    databaseUrl: infra.databaseUrl,
    temporalAddress: infra.temporalAddress,
    registerSearchAttributes: !infra.ownTemporal,
    api: true,
    worker: true,
  });
  const demo = await prepareDemo(services.orm, config);
  say('');
  say(`Wholesale API    ${config.publicBaseUrl}${API_PREFIX}  (OpenAPI: ${config.publicBaseUrl}${API_PREFIX}/openapi.json)`);
  say(`Temporal UI      ${infra.temporalUiUrl ?? `(external Temporal at ${infra.temporalAddress})`}`);
  say(`Demo account     ${demo.accountId}`);
  say(`Demo API key     ${demo.apiKey}`);
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
  process.stderr.write(`${err instanceof ConfigError ? err.message : err?.stack ?? err}\n`);
  process.exit(1);
});
