// `npx wholesale redemptions queue|claim|fulfil|fail|release`: the operator queue
// (REDEMPTION_UPSTREAM=operators), the same service functions as the admin API. Decisions reach
// the redemption workflow through Temporal at TEMPORAL_ADDRESS (or 127.0.0.1:TEMPORAL_PORT).
import type { Config } from './config';
import type { Orm } from './db/orm';
import { ApiError } from './domain/errors';
import { claimRedemption, decideQueued, listQueue, releaseQueued, type OperatorOutcome, type Who } from './services/operator-queue';
import { settledRedemption } from './services/redemptions';
import { connectTemporalFor } from './temporal/client';
import { parseKeyRing } from './temporal/codec';

export const OPERATOR_QUEUE_USAGE = `  redemptions queue [--limit N]                       redemptions waiting for an operator, oldest first, with claims
  redemptions claim ID --actor NAME [--reason TEXT]   claim one for OPERATOR_CLAIM_SECONDS; prints its redeem details
  redemptions fulfil ID --actor NAME --reason TEXT --deliverable TEXT
                                                      the claim holder fulfils it; waits for the outcome
  redemptions fail ID --actor NAME --reason TEXT --failure-code fulfillment_failed|rejected_by_operator [--holds-resources]
                                                      the claim holder fails it (--holds-resources: resubmission is
                                                      retry_conflict until released)
  redemptions release ID --actor NAME --reason TEXT   the supplier let go of a failed attempt's resources`;

/** The parseArgs options these commands read (besides --actor, --reason and --limit). */
export const OPERATOR_QUEUE_OPTIONS = {
  deliverable: { type: 'string' }, 'failure-code': { type: 'string' }, 'holds-resources': { type: 'boolean' },
} as const;

type Values = Record<string, string | boolean | undefined>;
type QueueCommand = (ctx: { orm: Orm; config: Config; values: Values; positionals: string[] }) => Promise<unknown>;

const text = (values: Values, name: string): string => {
  const v = values[name];
  if (typeof v !== 'string' || !v.trim()) throw new ApiError('invalid_input', `--${name} is required`);
  return v.trim();
};

const idOf = (positionals: string[], usage: string): string => {
  const id = positionals[2];
  if (!id) throw new ApiError('invalid_input', `usage: wholesale redemptions ${usage}`);
  return id;
};

const who = (values: Values): Who => ({ actor: text(values, 'actor'), reason: text(values, 'reason') });

async function decideFromCli(orm: Orm, config: Config, redemptionId: string, by: Who, decision: OperatorOutcome) {
  const temporal = await connectTemporalFor(config);
  try {
    const deps = { em: orm.em.fork(), temporal, keys: parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS), claimSeconds: config.OPERATOR_CLAIM_SECONDS };
    return await settledRedemption(orm.em.fork(), await decideQueued(deps, redemptionId, by, decision), 30_000);
  } finally {
    await temporal.connection.close();
  }
}

export const operatorQueueCommands: Record<string, QueueCommand> = {
  'redemptions queue': async ({ orm, values }) => ({
    redemptions: await listQueue(orm.em.fork(), Math.min(Math.max(Number(values.limit ?? 50) || 50, 1), 200)),
  }),
  'redemptions claim': async ({ orm, config, values, positionals }) => {
    const id = idOf(positionals, 'claim ID --actor NAME [--reason TEXT]');
    const reason = typeof values.reason === 'string' && values.reason.trim() ? values.reason.trim() : 'claimed from the queue';
    const deps = { em: orm.em.fork(), keys: parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS), claimSeconds: config.OPERATOR_CLAIM_SECONDS };
    return claimRedemption(deps, id, { actor: text(values, 'actor'), reason });
  },
  'redemptions fulfil': async ({ orm, config, values, positionals }) => {
    const id = idOf(positionals, 'fulfil ID --actor NAME --reason TEXT --deliverable TEXT');
    return decideFromCli(orm, config, id, who(values), { outcome: 'fulfilled', deliverable: text(values, 'deliverable') });
  },
  'redemptions fail': async ({ orm, config, values, positionals }) => {
    const id = idOf(positionals, 'fail ID --actor NAME --reason TEXT --failure-code fulfillment_failed|rejected_by_operator [--holds-resources]');
    const failureCode = text(values, 'failure-code');
    if (failureCode !== 'fulfillment_failed' && failureCode !== 'rejected_by_operator') {
      throw new ApiError('invalid_input', '--failure-code must be fulfillment_failed or rejected_by_operator');
    }
    return decideFromCli(orm, config, id, who(values), { outcome: 'failed', failureCode, holdsResources: values['holds-resources'] === true });
  },
  'redemptions release': async ({ orm, values, positionals }) =>
    releaseQueued(orm.em.fork(), idOf(positionals, 'release ID --actor NAME --reason TEXT'), who(values)),
};
