import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import type { Providers } from '../src/providers/all-providers';
import type { TemporalHandle } from '../src/temporal/client';
import type { EvmCheckoutDeps } from '../src/services/payments/evm-checkout-watch';
import { createEvmCheckoutActivities } from './evm-checkouts-activities';
import { createOrderActivities } from './orders-activities';
import { createPaymentActivities } from './payments-activities';
import { createProcurementActivities } from './procurement-activities';
import { createReconcileActivities } from './reconcile-activities';
import { createRedemptionActivities } from './redemptions-activities';
import { createWebhookActivities } from './webhooks-activities';
import { createExportActivities } from './exports-activities';
import { createBatchActivities } from './batches-activities';

/**
 * The service's activities, over the providers the composition root built for this process, and
 * its Temporal client (the reconciler describes and starts workflows with it). `notifyPaid`: how
 * the EVM checkout's watch tells a paid order's workflow (the root's, so no activity loads the starters).
 */
export function createActivities(deps: {
  orm: Orm;
  config: Config;
  providers: Providers;
  temporal?: TemporalHandle;
  notifyPaid?: EvmCheckoutDeps['notifyPaid'];
}) {
  const d = {
    orm: deps.orm,
    config: deps.config,
    temporal: deps.temporal,
    notifyPaid: deps.notifyPaid,
    ...deps.providers,
  };
  return {
    ...createOrderActivities(d),
    ...createPaymentActivities(d),
    ...createEvmCheckoutActivities(d),
    ...createRedemptionActivities(d),
    ...createWebhookActivities(d),
    ...createProcurementActivities(d),
    ...createExportActivities(d),
    ...createBatchActivities(d),
    ...createReconcileActivities({ orm: deps.orm, config: deps.config, temporal: deps.temporal }),
  };
}
