// `npx wholesale support orders|show|resume|deliver|refund`: support tooling for direct-code
// orders (spec 3.2 needs_attention), the same service functions as the admin API. Lists come
// from Postgres; actions reach the order's procurement workflow through Temporal at
// TEMPORAL_ADDRESS (or 127.0.0.1:TEMPORAL_PORT, the `npm start` stack).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from './config';
import type { Orm } from './db/orm';
import { accountOfOrder } from './db/audit-store';
import { ApiError } from './domain/errors';
import { auditedCommand, operatorOf } from './cli-operator';
import {
  deliverOrder,
  FULFILLMENT_STATUSES,
  listSupportOrders,
  refundOrder,
  resumeOrder,
  supportOrderDetail,
  type FulfillmentStatus,
  type SupportDeps,
} from './services/supply/support';
import { connectTemporalFor } from './temporal/client';

export const SUPPORT_USAGE = `  support orders [--status needs_attention] [--account ID] [--limit N]
                                                      direct-code orders by fulfillment status, longest waiting first
  support show ORDER_ID                               one order: support actions and the procurement workflow's state
  support resume ORDER_ID --by NAME --reason TEXT     try the supplier again for a needs_attention order
  support deliver ORDER_ID --by NAME --reason TEXT (--codes A,B | --codes-file FILE)
                                                      deliver codes obtained by hand, one per missing unit
  support refund ORDER_ID --by NAME --reason TEXT     refund the undelivered units to the balance; obtained codes
                                                      go to the reseller and the order becomes refunded`;

/** The parseArgs options these commands read (besides --by, --actor and --reason). */
export const SUPPORT_OPTIONS = {
  status: { type: 'string' },
  codes: { type: 'string' },
  'codes-file': { type: 'string' },
  limit: { type: 'string' },
} as const;

type Values = Record<string, string | undefined>;
type SupportCommand = (ctx: { orm: Orm; config: Config; values: Values; positionals: string[] }) => Promise<unknown>;

function orderIdOf(positionals: string[], usage: string): string {
  const id = positionals[2];
  if (!id || id.length > 255) throw new ApiError('invalid_input', `usage: ${usage}`);
  return id;
}

/** Connects to Temporal for one command. */
async function withSupport<T>(orm: Orm, config: Config, run: (deps: SupportDeps) => Promise<T>): Promise<T> {
  const temporal = await connectTemporalFor(config);
  try {
    return await run({ em: orm.em.fork(), temporal });
  } finally {
    await temporal.connection.close();
  }
}

type OrderAction = 'order.resume' | 'order.deliver' | 'order.refund';

/** A support action on an order, by the operator the command names, under its audit row (filed under the order's account too). */
function supportAction<T>(
  orm: Orm,
  config: Config,
  values: Values,
  entry: { action: OrderAction; orderId: string; details?: Record<string, unknown> },
  run: (deps: SupportDeps, who: { actor: string; reason: string }) => Promise<T>,
): Promise<T> {
  const operator = operatorOf(values);
  return withSupport(orm, config, async (deps) => {
    const audit = {
      action: entry.action,
      subjectId: entry.orderId,
      accountId: await accountOfOrder(orm.em.fork(), entry.orderId),
      details: entry.details,
    };
    return auditedCommand(deps.em, operator, audit, () =>
      run(deps, { actor: operator.name, reason: operator.reason! }),
    );
  });
}

function codesFrom(values: Values): string[] {
  if (values.codes && values['codes-file'])
    throw new ApiError('invalid_input', 'give --codes or --codes-file, not both');
  const raw = values['codes-file']
    ? readFileSync(resolve(values['codes-file']), 'utf8').split(/\r?\n/)
    : (values.codes ?? '').split(',');
  const codes = raw.map((c) => c.trim()).filter(Boolean);
  if (codes.length === 0)
    throw new ApiError('invalid_input', '--codes A,B or --codes-file FILE (one code per line) is required');
  return codes;
}

export const supportCommands: Record<string, SupportCommand> = {
  'support orders': async ({ orm, values }) => {
    const status = values.status;
    if (status !== undefined && !(FULFILLMENT_STATUSES as readonly string[]).includes(status)) {
      throw new ApiError('invalid_input', `--status must be one of ${FULFILLMENT_STATUSES.join(', ')}`);
    }
    const limit = Number(values.limit ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500)
      throw new ApiError('invalid_input', '--limit must be 1 to 500');
    return listSupportOrders(orm.em.fork(), {
      fulfillmentStatus: status as FulfillmentStatus | undefined,
      accountId: values.account,
      limit,
    });
  },
  'support show': ({ orm, config, positionals }) =>
    withSupport(orm, config, (deps) => supportOrderDetail(deps, orderIdOf(positionals, 'support show ORDER_ID'))),
  'support resume': ({ orm, config, values, positionals }) => {
    const orderId = orderIdOf(positionals, 'support resume ORDER_ID --by NAME --reason TEXT');
    return supportAction(orm, config, values, { action: 'order.resume', orderId }, (deps, who) =>
      resumeOrder(deps, orderId, who),
    );
  },
  'support deliver': ({ orm, config, values, positionals }) => {
    const orderId = orderIdOf(
      positionals,
      'support deliver ORDER_ID --by NAME --reason TEXT (--codes A,B | --codes-file FILE)',
    );
    const codes = codesFrom(values);
    return supportAction(
      orm,
      config,
      values,
      { action: 'order.deliver', orderId, details: { codes: codes.length } },
      (deps, who) => deliverOrder(deps, orderId, { ...who, codes }),
    );
  },
  'support refund': ({ orm, config, values, positionals }) => {
    const orderId = orderIdOf(positionals, 'support refund ORDER_ID --by NAME --reason TEXT');
    return supportAction(orm, config, values, { action: 'order.refund', orderId }, (deps, who) =>
      refundOrder(deps, orderId, who),
    );
  },
};
