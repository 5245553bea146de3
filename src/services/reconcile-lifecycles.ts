import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config';
import type { RepairKind } from '../contracts/reconcile-contract';
import {
  openEvmCheckouts,
  openRedemptions,
  overdueDeliveries,
  pendingPayments,
  runningBatches,
  unfinishedProcurements,
  unsettledExports,
} from '../db/reconcile-store';
import type { TemporalHandle } from '../temporal/client';
import { followPayment, notifyPaid, paymentStarter } from '../temporal/payment-notices';
import {
  batchStarter,
  deliveryStarter,
  evmCheckoutStarter,
  exportStarter,
  procurementStarter,
  redemptionStarter,
} from '../temporal/starters';

// What the reconciler knows of each lifecycle (src/services/reconcile.ts compares): which rows are
// not final yet, and how each one's workflow is named and started again, the way its lifecycle
// starts it.

export type ReconcileConfig = Pick<
  Config,
  | 'RECONCILE_GRACE_SECONDS'
  | 'RECONCILE_PAGE_SIZE'
  | 'RECONCILE_LEDGER_FULL_HOURS'
  | 'PAYMENT_PROVIDER'
  | 'BATCH_CHUNK_LINES'
> &
  Parameters<typeof redemptionStarter>[1];

/** How one row's workflow is found and started again. */
export interface Plan {
  kind: RepairKind;
  subjectId: string;
  workflowId: string;
  /** Closed statuses that are an end, not a loss (a procurement that completed stays done). */
  settledBy?: readonly string[];
  restart(): Promise<unknown>;
  detail?: Record<string, unknown>;
}

/** A lifecycle the reconciler pages through: its non-final rows and each one's plan. */
export interface Lifecycle<Row> {
  rows(em: EntityManager, after: string | null, limit: number, graceSeconds: number): Promise<Row[]>;
  cursor(row: Row): string;
  plan(row: Row): Plan;
}

const lifecycle = <Row>(l: Lifecycle<Row>) => l;

export function lifecycles(deps: { temporal: TemporalHandle; config: ReconcileConfig }) {
  const { temporal, config } = deps;
  return {
    payments: lifecycle({
      rows: (em, after, limit, grace) => pendingPayments(em, after ?? '', limit, grace),
      cursor: (r) => r.id,
      plan: (r) => {
        const order = {
          id: r.id,
          kind: r.kind,
          accountId: r.account_id,
          externalOrderId: r.external_order_id,
          externalTopupId: r.external_topup_id,
        };
        // An expired one is here because its payment was confirmed and never settled: the new run
        // is told it was paid, as the lost notice told the old one, and settles it as a late
        // payment (only on the confirmation Postgres holds). A pending one is followed.
        const paid = r.status === 'expired';
        return {
          kind: r.kind === 'topup' ? 'topup_payment' : 'order_payment',
          subjectId: r.id,
          workflowId: paymentStarter(temporal, config, order).workflowId,
          restart: () => (paid ? notifyPaid : followPayment)(temporal, config, order),
          ...(paid ? { detail: { status: r.status, paymentConfirmed: true } } : {}),
        };
      },
    }),
    procurements: lifecycle({
      rows: (em, after, limit, grace) => unfinishedProcurements(em, after ?? '', limit, grace),
      cursor: (r) => r.id,
      plan: (r) => {
        const starter = procurementStarter(temporal, {
          orderId: r.id,
          accountId: r.account_id,
          externalOrderId: r.external_order_id,
        });
        return {
          kind: 'procurement',
          subjectId: r.id,
          workflowId: starter.workflowId,
          settledBy: ['COMPLETED'],
          restart: () => starter.start(),
        };
      },
    }),
    redemptions: lifecycle({
      rows: (em, after, limit, grace) => openRedemptions(em, after ?? '', limit, grace),
      cursor: (r) => r.id,
      plan: (r) => {
        // A new run of the current attempt takes up where Postgres stands: its submission is found
        // recorded (the upstream is not asked twice) and the upstream's status is asked again.
        const starter = redemptionStarter(temporal, config, { redemptionId: r.id, attempt: r.attempt });
        return {
          kind: 'redemption',
          subjectId: r.id,
          workflowId: starter.workflowId,
          restart: () => starter.start(),
          detail: { attempt: r.attempt },
        };
      },
    }),
    deliveries: lifecycle({
      rows: (em, after, limit, grace) => overdueDeliveries(em, after ?? '', limit, grace),
      cursor: (r) => r.id,
      plan: (r) => {
        const starter = deliveryStarter(temporal, config, { id: r.id, accountId: r.account_id });
        return {
          kind: 'webhook_delivery',
          subjectId: r.id,
          workflowId: starter.workflowId,
          restart: () => starter.start(),
        };
      },
    }),
    evm_checkouts: lifecycle({
      // Only where this deployment takes EVM payments: a worker without the provider cannot watch.
      rows: (em, after, limit, grace) =>
        config.PAYMENT_PROVIDER === 'evm'
          ? openEvmCheckouts(em, after === null ? -1 : Number(after), limit, grace)
          : Promise.resolve([]),
      cursor: (r) => String(r.derivation_index),
      plan: (r) => {
        // The watch's windows are the checkout's, counted from its order's deadline (from its own
        // creation if the order never committed), not from now: it stops when the lost one would have.
        const expiresAt = r.expires_at
          ? new Date(r.expires_at).getTime()
          : new Date(r.created_at).getTime() + config.PAYMENT_WINDOW_SECONDS * 1000;
        const starter = evmCheckoutStarter(temporal, config, {
          orderId: r.reference,
          depositIndex: r.derivation_index,
          expiresAt,
        });
        // Named like its watch, never by the checkout id (the secret half of its URL).
        return {
          kind: 'evm_checkout',
          subjectId: `${r.reference}:${r.derivation_index}`,
          workflowId: starter.workflowId,
          settledBy: ['COMPLETED'],
          restart: () => starter.start(),
        };
      },
    }),
    exports: lifecycle({
      rows: (em, after, limit, grace) => unsettledExports(em, after ?? '', limit, grace),
      cursor: (r) => r.id,
      plan: (r) => {
        // A new run takes up from the pages Postgres holds (or from a ready file's remaining life).
        const starter = exportStarter(temporal, { exportId: r.id, accountId: r.account_id });
        return {
          kind: 'export',
          subjectId: r.id,
          workflowId: starter.workflowId,
          settledBy: ['COMPLETED'],
          restart: () => starter.start(),
        };
      },
    }),
    batches: lifecycle({
      rows: (em, after, limit, grace) => runningBatches(em, after ?? '', limit, grace),
      cursor: (r) => r.id,
      plan: (r) => {
        // A new run places only the lines that have no outcome in Postgres.
        const starter = batchStarter(temporal, config, { batchId: r.id, accountId: r.account_id });
        return {
          kind: 'batch',
          subjectId: r.id,
          workflowId: starter.workflowId,
          settledBy: ['COMPLETED'],
          restart: () => starter.start(),
        };
      },
    }),
  };
}
