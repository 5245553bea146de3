// Every workflow the worker runs; the bundler starts here.
export { orderWorkflow } from './order';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { redemptionWorkflow } from './redemption';
