// Every workflow the worker runs; the bundler starts here.
export { orderWorkflow } from './order';
export { topupWorkflow } from './topup';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { redemptionWorkflow } from './redemption';
export { procurementWorkflow } from './procurement';
export { evmCheckoutWorkflow } from './evm-checkout';
export { reconcileWorkflow } from './reconcile';
