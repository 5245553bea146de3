// Every workflow the worker runs; the bundler starts here.
export { orderWorkflow } from './order-workflow';
export { topupWorkflow } from './topup-workflow';
export { webhookDeliveryWorkflow } from './webhook-delivery-workflow';
export { redemptionWorkflow } from './redemption-workflow';
export { procurementWorkflow } from './procurement-workflow';
export { evmCheckoutWorkflow } from './evm-checkout-workflow';
export { chainScanWorkflow } from './chain-scan-workflow';
export { reconcileWorkflow } from './reconcile-workflow';
export { exportWorkflow } from './export-workflow';
export { batchWorkflow } from './batch-workflow';
