// `npx wholesale ...`: operator commands printing JSON. Works against the stack that `npm start`
// runs (its embedded Postgres, started here if it is not running) or against DATABASE_URL.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { loadConfig, type Config } from './config';
import { initOrm, migrate, type Orm } from './db/orm';
import { auditLogGuard } from './db/service-role';
import { seedCatalog } from './db/seed';
import { startEmbeddedPostgres } from './dev/postgres';
import { createAccount, createApiKey } from './services/accounts/accounts';
import { keyLimitDetails, keyLimits } from './services/accounts/key-access';
import { adjustBalance, importStock } from './services/payments/admin';
import { groupPicker, productsWithSuppliers } from './services/supply/catalog';
import { findOrder } from './services/orders/orders';
import { ApiError } from './domain/errors';
import { isUuid } from './domain/redeem-info';
import { payCheckout } from './providers/sandbox/sandbox-payments';
import { fromDb, isAmount, parseDecimal, toDecimal } from './domain/money';
import { centsToUnits, scaledToCents, toScaled } from './domain/token-amounts';
import { evmCheckout, evmCheckoutReceipts } from './db/evm-store';
import { DEV_CHAIN_FILE, sendDevPayment, type DevChainFile } from './dev/evm-chain';
import { depositAddress, receivingKey, tronDepositAddress } from './providers/evm/addresses';
import { decideRedemption, settledRedemption } from './services/redemptions/redemptions';
import { reconcileHistory, reconcileNow } from './services/reconcile';
import { connectTemporalFor } from './temporal/client';
import { SUPPORT_OPTIONS, SUPPORT_USAGE, supportCommands } from './cli-support';
import { OPERATOR_QUEUE_OPTIONS, OPERATOR_QUEUE_USAGE, operatorQueueCommands } from './cli-operator-queue';
import { listenForWebhooks, WEBHOOKS_USAGE } from './cli-webhooks';
import { STAFF_OPTIONS, STAFF_USAGE, staffCommands } from './console/console-cli';
import { readStateSecrets } from './dev/state-secrets';
import { PlainText, REPORT_OPTIONS, REPORT_USAGE, reportCommands } from './cli-reports';
import { syncSupplierCatalog } from './services/supply/supplier-costs';
import { auditedCommand, OPERATOR_OPTIONS, operatorOf } from './cli-operator';

const USAGE = `usage: wholesale <command>
Commands that change money, codes, access, staff or prices take --by NAME (who runs it; --actor is its
older name) and --reason TEXT, and write an audit row before they act.
  accounts create --name NAME                         create an account; prints {accountId, apiKey} (key shown once)
  keys create --account ID --by NAME --reason TEXT [--scopes read,orders] [--cidr 203.0.113.0/24,...] [--expires 2027-01-01]
                                                      create another API key for an account (every scope, anywhere,
                                                      no expiry unless limited; a date expires at its start, UTC)
  balance adjust --account ID --amount 12.34 --note TEXT --by NAME
                                                      write an adjust ledger row (amount may be negative; the note is the reason)
  stock import --product ID --file codes.txt --by NAME --reason TEXT
                                                      import inventory codes, one per line
  products list                                       the catalog with Lv1..Lv5 prices
  products group GROUP_ID [--level N]                 gift-card value picker: in-stock, available rows by denomination
  catalog seed --by NAME --reason TEXT                insert the demo catalog (existing products are kept)
  sandbox pay ORDER_ID                                pay an order's or top-up's sandbox checkout as the payer would
  evm address INDEX                                   the deposit address EVM_XPUB derives at m/44'/60'/0'/0/INDEX (check it in your wallet)
  tron address INDEX                                  the TRON deposit address (T…) TRON_XPUB derives at m/44'/195'/0'/0/INDEX
  dev-chain pay CHECKOUT_ID [--amount 12.34] [--token USDT|USDC]
                                                      PAYMENT_PROVIDER=evm under npm start: send what is missing (or
                                                      --amount) to the checkout's deposit address on the local chain
  support redemption fulfill|reject ID --by NAME --reason TEXT
                                                      operator decision on a pending or processing redemption;
                                                      waits for the outcome (Temporal at TEMPORAL_ADDRESS or 127.0.0.1:TEMPORAL_PORT)
  reconcile --dry-run                                 what the reconciler would restart now, and ledgers that do not add up
  reconcile                                           reconcile now, from this process (the schedule does it every RECONCILE_SECONDS)
  reconcile --history [--limit N]                     what the reconciler did: repairs, give-ups, ledger alerts, newest first
  migrate                                             apply pending migrations (as DATABASE_MIGRATION_URL's role when set, then
                                                      grant DATABASE_URL's role); says whether that role can rewrite the audit log
${SUPPORT_USAGE}
${REPORT_USAGE}
${OPERATOR_QUEUE_USAGE}
${WEBHOOKS_USAGE}
${STAFF_USAGE}`;

type Command = (ctx: {
  orm: Orm;
  config: Config;
  values: Record<string, string | undefined>;
  positionals: string[];
  migrated: string[];
}) => Promise<unknown>;

const need = (values: Record<string, string | undefined>, name: string): string => {
  const v = values[name];
  if (!v) throw new ApiError('invalid_input', `--${name} is required`);
  return v;
};

const accountIdOf = (values: Record<string, string | undefined>): string => {
  const id = need(values, 'account');
  if (!isUuid(id)) throw new ApiError('invalid_input', '--account must be an account id (a UUID)');
  return id;
};

const commands: Record<string, Command> = {
  'accounts create': ({ orm, values }) => createAccount(orm.em.fork(), need(values, 'name')),
  'keys create': async ({ orm, values }) => {
    const accountId = accountIdOf(values);
    const em = orm.em.fork();
    const limits = keyLimits({
      scopes: values.scopes?.split(','),
      cidrs: values.cidr?.split(','),
      expires: values.expires,
    });
    const apiKey = await auditedCommand(
      em,
      operatorOf(values),
      { action: 'key.create', subjectId: accountId, accountId, details: keyLimitDetails(limits) },
      () => createApiKey(em, accountId, limits),
    );
    return { accountId, apiKey, ...keyLimitDetails(limits) };
  },
  'balance adjust': ({ orm, config, values }) => {
    const [accountId, amount, note] = [accountIdOf(values), need(values, 'amount'), need(values, 'note')];
    const em = orm.em.fork();
    return auditedCommand(
      em,
      operatorOf(values),
      { action: 'balance.adjust', subjectId: accountId, accountId, details: { amount } },
      () => adjustBalance(em, { accountId, amount, note, levelThresholds: config.LEVEL_THRESHOLDS }),
    );
  },
  'stock import': ({ orm, values }) => {
    const [productId, file] = [need(values, 'product'), need(values, 'file')];
    const operator = operatorOf(values);
    const lines = readFileSync(resolve(file), 'utf8').split(/\r?\n/);
    const em = orm.em.fork();
    return auditedCommand(
      em,
      operator,
      { action: 'stock.import', subjectId: productId, details: { lines: lines.filter((l) => l.trim()).length } },
      () => importStock(em, productId, lines),
    );
  },
  'products list': ({ orm }) => productsWithSuppliers(orm.em.fork()),
  'products group': async ({ orm, config, values, positionals }) => {
    const groupId = positionals[2] ?? need(values, 'group');
    return groupPicker(orm.em.fork(), groupId, Number(values.level ?? 1), config.STOCK_DISPLAY_CAP);
  },
  'catalog seed': async ({ orm, config, values }) => {
    await auditedCommand(orm.em.fork(), operatorOf(values), { action: 'catalog.seed' }, () =>
      seedCatalog(orm.em.fork()),
    );
    // New direct-code products get their supplier now rather than at the service's next start.
    await syncSupplierCatalog(orm.em.fork(), config);
    return { ok: true };
  },
  'sandbox pay': async ({ orm, config, positionals }) => {
    const orderId = positionals[2];
    if (!orderId) throw new ApiError('invalid_input', 'usage: sandbox pay ORDER_ID');
    const em = orm.em.fork();
    const order = await findOrder(em, orderId);
    if (!order?.checkoutId) throw new ApiError('not_found', `Order ${orderId} has no hosted checkout`);
    // As the payer would: the sandbox provider records the payment and sends its signed callback.
    const paid = await payCheckout(em, config.PAYMENT_CALLBACK_SECRET, order.checkoutId);
    if (!paid)
      throw new ApiError(
        'invalid_input',
        'That checkout was abandoned; replay the order in intent mode for a fresh one',
      );
    await paid.callback; // the callback must leave before the process exits
    return { orderId, checkout: 'paid', orderStatus: order.status };
  },
  'evm address': async ({ config, positionals }) => {
    const index = Number(positionals[2]);
    if (!Number.isInteger(index) || index < 0 || index >= 2 ** 31)
      throw new ApiError('invalid_input', 'usage: evm address INDEX (0 to 2147483647)');
    return { index, path: `m/44'/60'/0'/0/${index}`, address: depositAddress(receivingKey(config.EVM_XPUB), index) };
  },
  'tron address': async ({ config, positionals }) => {
    const index = Number(positionals[2]);
    if (!Number.isInteger(index) || index < 0 || index >= 2 ** 31)
      throw new ApiError('invalid_input', 'usage: tron address INDEX (0 to 2147483647)');
    return {
      index,
      path: `m/44'/195'/0'/0/${index}`,
      address: tronDepositAddress(receivingKey(config.TRON_XPUB, 195), index),
    };
  },
  'dev-chain pay': async ({ orm, config, values, positionals }) => {
    const checkoutId = positionals[2]?.split('/checkout/').pop();
    if (!checkoutId)
      throw new ApiError('invalid_input', 'usage: dev-chain pay CHECKOUT_ID [--amount 12.34] [--token USDT|USDC]');
    const file = resolve(config.STATE_DIR, DEV_CHAIN_FILE);
    if (!existsSync(file))
      throw new ApiError(
        'not_found',
        'No local chain: start the service with PAYMENT_PROVIDER=evm npm start (and no EVM_CHAINS)',
      );
    const chain = JSON.parse(readFileSync(file, 'utf8')) as DevChainFile;
    const em = orm.em.fork();
    const checkout = await evmCheckout(em, checkoutId);
    if (!checkout) throw new ApiError('not_found', `Checkout ${checkoutId} not found`);
    const receipts = (await evmCheckoutReceipts(em, checkoutId))!;
    const received = receipts.transfers.reduce((sum, t) => sum + toScaled(BigInt(t.units), t.decimals), 0n);
    const missing = Math.max(0, fromDb(checkout.amount) - Number(scaledToCents(received)));
    const amount = values.amount ?? toDecimal(missing);
    if (!isAmount(amount) || parseDecimal(amount) === 0)
      throw new ApiError('invalid_input', '--amount must be a Decimal above 0, e.g. 12.34');
    const token = (values.token ?? checkout.currency) as 'USDT' | 'USDC';
    if (token !== 'USDT' && token !== 'USDC') throw new ApiError('invalid_input', '--token must be USDT or USDC');
    const units = centsToUnits(parseDecimal(amount), chain.tokens[token].decimals);
    const txHash = await sendDevPayment(chain, token, checkout.address, units);
    return { checkoutId, token, amount, units: String(units), txHash };
  },
  'support redemption': async ({ orm, config, values, positionals }) => {
    const [action, redemptionId] = positionals.slice(2);
    if ((action !== 'fulfill' && action !== 'reject') || !redemptionId || redemptionId.length > 255) {
      throw new ApiError('invalid_input', 'usage: support redemption fulfill|reject ID --by NAME --reason TEXT');
    }
    const operator = operatorOf(values);
    const temporal = await connectTemporalFor(config);
    try {
      const decision = { decision: action, reason: operator.reason!, actor: operator.name } as const;
      const em = orm.em.fork();
      const ref = await auditedCommand(
        em,
        operator,
        { action: action === 'fulfill' ? 'redemption.fulfil' : 'redemption.reject', subjectId: redemptionId },
        () => decideRedemption({ em, temporal }, redemptionId, decision),
      );
      return await settledRedemption(orm.em.fork(), ref, 30_000);
    } finally {
      await temporal.connection.close();
    }
  },
  // Every command migrates first; this one says what that did, and what guards the audit log.
  migrate: async ({ orm, migrated }) => ({ migrated, auditLog: await auditLogGuard(orm.em.fork()) }),
  reconcile: async ({ orm, config, values }) => {
    if (values.history)
      return reconcileHistory(orm.em.fork(), Math.min(Math.max(Number(values.limit ?? 50) || 50, 1), 1000));
    const temporal = await connectTemporalFor(config);
    try {
      const dryRun = Boolean(values['dry-run']);
      // Operator lines on stderr, so stdout stays one JSON document.
      const line = (level: string) => (message: string, meta?: Record<string, unknown>) =>
        process.stderr.write(`${JSON.stringify({ level, msg: message, ...meta })}\n`);
      const { totals, findings } = await reconcileNow(
        { orm, temporal, config, log: { info: line('info'), warn: line('warn'), error: line('error') } },
        { dryRun },
      );
      return { dryRun, ...totals, findings };
    } finally {
      await temporal.connection.close();
    }
  },
  ...supportCommands,
  ...(reportCommands as Record<string, Command>),
  ...(operatorQueueCommands as Record<string, Command>),
  ...(staffCommands as Record<string, Command>),
};

async function reachable(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

async function openDatabase(config: Config): Promise<{ url: string; stop: () => Promise<void> }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => undefined };
  const embeddedUrl = `postgres://postgres:wholesale@127.0.0.1:${config.EMBEDDED_PG_PORT}/wholesale`;
  if (await reachable(embeddedUrl)) return { url: embeddedUrl, stop: async () => undefined };
  const pg = await startEmbeddedPostgres({
    dataDir: resolve(config.STATE_DIR, 'postgres'),
    port: config.EMBEDDED_PG_PORT,
  });
  return { url: pg.url, stop: () => pg.stop() };
}

/** The environment's settings, with the payload key and codec token `npm start` keeps in STATE_DIR. */
const cliConfig = () => loadConfig({ ...readStateSecrets(process.env.STATE_DIR || '.state'), ...process.env });

/** What a script can tell apart: 0 done, 1 the command failed, 2 the command line was not understood. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

class UsageError extends Error {}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        account: { type: 'string' },
        amount: { type: 'string' },
        ...OPERATOR_OPTIONS,
        product: { type: 'string' },
        file: { type: 'string' },
        group: { type: 'string' },
        level: { type: 'string' },
        token: { type: 'string' },
        ...SUPPORT_OPTIONS,
        ...OPERATOR_QUEUE_OPTIONS,
        ...STAFF_OPTIONS,
        ...REPORT_OPTIONS,
        port: { type: 'string' },
        key: { type: 'string' },
        api: { type: 'string' },
        keep: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        history: { type: 'boolean' },
        scopes: { type: 'string' },
        cidr: { type: 'string' },
        expires: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    // node:util's parse errors (an unknown flag, a flag without its value) are the caller's typo.
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_')) throw new UsageError((err as Error).message);
    throw err;
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.ok;
  }
  const name = positionals.slice(0, 2).join(' ');
  // Talks to the API over HTTP with an API key, as a reseller's receiver would: no database.
  if (name === 'webhooks listen') return listenForWebhooks(cliConfig(), values);
  const command = commands[name];
  if (!command) throw new UsageError(name ? `unknown command: ${name}` : 'no command given');
  const config = cliConfig();
  const db = await openDatabase(config);
  const orm = await initOrm(db.url);
  try {
    const migrated = await migrate(orm, { migrationUrl: config.DATABASE_MIGRATION_URL });
    const result = await command({
      orm,
      config,
      values: values as Record<string, string | undefined>,
      positionals,
      migrated,
    });
    process.stdout.write(result instanceof PlainText ? result.text : `${JSON.stringify(result, null, 2)}\n`);
    return EXIT.ok;
  } finally {
    await orm.close();
    await db.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) {
      process.stderr.write(`wholesale: ${err.message}\n${USAGE}\n`);
      process.exit(EXIT.usage);
    }
    // One JSON line a script can parse (a message's own line breaks stay escaped in it), never a stack trace.
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${JSON.stringify({ error: err instanceof ApiError ? err.code : 'error', message })}\n`);
    process.exit(EXIT.failed);
  },
);
