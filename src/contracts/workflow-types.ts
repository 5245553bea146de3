// The signature of every workflow the worker runs, as Node code starts it: its type name, input
// and result, from the lifecycles' contract modules. The starters are typed by these instead of by
// the workflow functions, so the API side never imports workflows/ (whose code imports the
// activities' types, which import services: an import loop across the Temporal boundary).
// workflows/signatures.ts checks at compile time that the workflows match.
import type { ChainScanWorkflowInput, EvmCheckoutWatchState, EvmCheckoutWorkflowInput } from './evm-checkouts-contract';
import type { OrderWorkflowInput, OrderWorkflowState } from './orders-contract';
import type { PaymentWorkflowState } from './payments-contract';
import type { ProcurementState, ProcurementWorkflowInput } from './procurement-contract';
import type { ReconcileTotals, ReconcileWorkflowInput } from './reconcile-contract';
import type { RedemptionWorkflowInput, RedemptionWorkflowState } from './redemptions-contract';
import type { TopupWorkflowInput } from './topups-contract';
import type { DeliveryWorkflowInput, DeliveryWorkflowResult } from './webhooks-contract';
import type { ExportProgress, ExportWorkflowInput } from './exports-contract';
import type { BatchWorkflowInput, BatchWorkflowResult } from './batches-contract';

export interface Workflows {
  orderWorkflow: (input: OrderWorkflowInput) => Promise<OrderWorkflowState>;
  topupWorkflow: (input: TopupWorkflowInput) => Promise<PaymentWorkflowState>;
  webhookDeliveryWorkflow: (input: DeliveryWorkflowInput) => Promise<DeliveryWorkflowResult>;
  redemptionWorkflow: (input: RedemptionWorkflowInput) => Promise<RedemptionWorkflowState>;
  procurementWorkflow: (input: ProcurementWorkflowInput) => Promise<ProcurementState>;
  evmCheckoutWorkflow: (input: EvmCheckoutWorkflowInput) => Promise<EvmCheckoutWatchState>;
  chainScanWorkflow: (input: ChainScanWorkflowInput) => Promise<void>;
  reconcileWorkflow: (input?: ReconcileWorkflowInput) => Promise<ReconcileTotals>;
  exportWorkflow: (input: ExportWorkflowInput) => Promise<ExportProgress>;
  batchWorkflow: (input: BatchWorkflowInput) => Promise<BatchWorkflowResult>;
}
