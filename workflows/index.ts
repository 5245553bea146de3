// Every workflow the worker runs; the bundler starts here.
export { orderWorkflow } from './order';
export { redemptionWorkflow } from './redemption';
