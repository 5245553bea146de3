import { Context, log } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import type { Supplier, SupplierPurchase } from '../src/providers/supplier';
import {
  deliverManually,
  loadFacts,
  markNeedsAttention,
  procureRound,
  refundUndelivered,
  resumeProcurement,
} from '../src/services/supply/procurement';
import type {
  DeliverRequest,
  OrderFacts,
  ProcurementTiming,
  RoundResult,
  SupportRequest,
} from '../src/contracts/procurement-contract';
import { procurementTiming } from '../src/temporal/timing';
import { businessErrors } from './activity-errors';
import { procurementRounds, procurementUnits } from '../src/metrics/registry';
import { checkSupplierPrice } from '../src/services/supply/supplier-costs';

/** How often a supplier call in flight tells Temporal the worker is still alive. */
const HEARTBEAT_EVERY_MS = 1000;

/** The procurement workflow's bridge to Postgres and the supplier; every step is idempotent. */
export function createProcurementActivities(deps: { orm: Orm; config: Config; supplier: Supplier }) {
  const { orm, config, supplier } = deps;
  const baseUrl = config.publicBaseUrl;
  /** Flags a product whose supplier price rose above our Lv1 price; never fails the round that bought. */
  const checkPrice = async (productId: string, purchase: SupplierPurchase) => {
    try {
      await checkSupplierPrice(orm.em.fork(), productId, purchase, config.SUPPLIER_COST_AT_PAR, log);
    } catch (err) {
      log.warn('supplier price check failed', {
        productId,
        transactionId: purchase.transactionId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  };
  return {
    /** The order as it stands, and the bounds of this worker's config. */
    async beginProcurement(orderId: string): Promise<{ facts: OrderFacts; timing: ProcurementTiming }> {
      return businessErrors(async () => ({
        facts: await loadFacts(orm.em.fork(), orderId),
        timing: procurementTiming(config),
      }));
    },

    /**
     * One supplier round. It heartbeats while the supplier call is in flight, so a worker killed
     * mid-call is noticed in seconds and the round is retried, with the same key, elsewhere.
     */
    async procureRound(input: { orderId: string; idempotencyKey: string }): Promise<RoundResult> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const round = await businessErrors(() =>
          procureRound(orm.em.fork(), supplier, { ...input, baseUrl }, checkPrice),
        );
        if (round.outcome !== 'not_procuring') {
          procurementRounds.inc({
            outcome: round.outcome === 'obtained' ? (round.obtained > 0 ? 'progress' : 'empty') : round.outcome,
          });
          procurementUnits.inc(round.obtained);
        }
        return round;
      } finally {
        clearInterval(beat);
      }
    },

    async markNeedsAttention(orderId: string): Promise<OrderFacts> {
      return markNeedsAttention(orm.em.fork(), orderId);
    },

    async resumeProcurement(input: { orderId: string } & SupportRequest): Promise<OrderFacts> {
      return businessErrors(() => resumeProcurement(orm.em.fork(), input.orderId, input));
    },

    async deliverManually(input: { orderId: string } & DeliverRequest): Promise<OrderFacts> {
      return businessErrors(() => deliverManually(orm.em.fork(), input.orderId, input, baseUrl));
    },

    async refundUndelivered(input: { orderId: string } & SupportRequest): Promise<OrderFacts> {
      return businessErrors(() => refundUndelivered(orm.em.fork(), input.orderId, input, config.LEVEL_THRESHOLDS));
    },
  };
}

export type ProcurementActivities = ReturnType<typeof createProcurementActivities>;
