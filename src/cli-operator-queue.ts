// `npx wholesale redemptions queue|claim|fulfil|fail|release`: the operator queue
// (REDEMPTION_UPSTREAM=operators), the same service functions as the admin API. Decisions reach
// the redemption workflow through Temporal at TEMPORAL_ADDRESS (or 127.0.0.1:TEMPORAL_PORT).
import type { Config } from './config';
import type { Orm } from './db/orm';
import { ApiError } from './domain/errors';
import {
  claimRedemption,
  decideQueued,
  listQueue,
  releaseQueued,
  type OperatorOutcome,
  type Who,
} from './services/redemptions/operator-queue';
import { settledRedemption } from './services/redemptions/redemptions';
import { connectTemporalFor } from './temporal/client';
import { parseKeyRing } from './temporal/codec';
import { auditedCommand, operatorOf, type Operator } from './cli-operator';

export const OPERATOR_QUEUE_USAGE = `  redemptions queue [--limit N]                       redemptions waiting for an operator, oldest first, with claims
  redemptions claim ID --by NAME [--reason TEXT]      claim one for OPERATOR_CLAIM_SECONDS; prints its redeem details
  redemptions fulfil ID --by NAME --reason TEXT --deliverable TEXT
                                                      the claim holder fulfils it; waits for the outcome
  redemptions fail ID --by NAME --reason TEXT --failure-code fulfillment_failed|rejected_by_operator [--holds-resources]
                                                      the claim holder fails it (--holds-resources: resubmission is
                                                      retry_conflict until released)
  redemptions release ID --by NAME --reason TEXT      the supplier let go of a failed attempt's resources`;

/** The parseArgs options these commands read (besides --by, --actor, --reason and --limit). */
export const OPERATOR_QUEUE_OPTIONS = {
  deliverable: { type: 'string' },
  'failure-code': { type: 'string' },
  'holds-resources': { type: 'boolean' },
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
  if (!id || id.length > 255) throw new ApiError('invalid_input', `usage: wholesale redemptions ${usage}`);
  return id;
};

const who = (operator: Operator): Who => ({ actor: operator.name, reason: operator.reason! });

async function decideFromCli(
  orm: Orm,
  config: Config,
  redemptionId: string,
  operator: Operator,
  decision: OperatorOutcome,
) {
  const temporal = await connectTemporalFor(config);
  try {
    const em = orm.em.fork();
    const deps = {
      em,
      temporal,
      keys: parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS),
      claimSeconds: config.OPERATOR_CLAIM_SECONDS,
    };
    const details =
      decision.outcome === 'failed'
        ? { failureCode: decision.failureCode, holdsResources: decision.holdsResources }
        : undefined;
    const ref = await auditedCommand(
      em,
      operator,
      {
        action: decision.outcome === 'fulfilled' ? 'redemption.fulfil' : 'redemption.fail',
        subjectId: redemptionId,
        details,
      },
      () => decideQueued(deps, redemptionId, who(operator), decision),
    );
    return await settledRedemption(orm.em.fork(), ref, 30_000);
  } finally {
    await temporal.connection.close();
  }
}

export const operatorQueueCommands: Record<string, QueueCommand> = {
  'redemptions queue': async ({ orm, values }) => ({
    redemptions: await listQueue(orm.em.fork(), Math.min(Math.max(Number(values.limit ?? 50) || 50, 1), 200)),
  }),
  'redemptions claim': async ({ orm, config, values, positionals }) => {
    const id = idOf(positionals, 'claim ID --by NAME [--reason TEXT]');
    const operator = operatorOf(values, { reason: 'optional' });
    const reason = operator.reason ?? 'claimed from the queue';
    const em = orm.em.fork();
    const deps = { em, keys: parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS), claimSeconds: config.OPERATOR_CLAIM_SECONDS };
    // A claim shows the redeem details: who saw them is worth a row too.
    return auditedCommand(em, { ...operator, reason }, { action: 'redemption.claim', subjectId: id }, () =>
      claimRedemption(deps, id, { actor: operator.name, reason }),
    );
  },
  'redemptions fulfil': async ({ orm, config, values, positionals }) => {
    const id = idOf(positionals, 'fulfil ID --by NAME --reason TEXT --deliverable TEXT');
    return decideFromCli(orm, config, id, operatorOf(values), {
      outcome: 'fulfilled',
      deliverable: text(values, 'deliverable'),
    });
  },
  'redemptions fail': async ({ orm, config, values, positionals }) => {
    const id = idOf(
      positionals,
      'fail ID --by NAME --reason TEXT --failure-code fulfillment_failed|rejected_by_operator [--holds-resources]',
    );
    const failureCode = text(values, 'failure-code');
    if (failureCode !== 'fulfillment_failed' && failureCode !== 'rejected_by_operator') {
      throw new ApiError('invalid_input', '--failure-code must be fulfillment_failed or rejected_by_operator');
    }
    return decideFromCli(orm, config, id, operatorOf(values), {
      outcome: 'failed',
      failureCode,
      holdsResources: values['holds-resources'] === true,
    });
  },
  'redemptions release': async ({ orm, values, positionals }) => {
    const id = idOf(positionals, 'release ID --by NAME --reason TEXT');
    const operator = operatorOf(values);
    const em = orm.em.fork();
    return auditedCommand(em, operator, { action: 'redemption.release', subjectId: id }, () =>
      releaseQueued(em, id, who(operator)),
    );
  },
};
