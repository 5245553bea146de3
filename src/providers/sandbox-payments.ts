// src/pages/checkout.ts imports the sandbox payment provider here; that page is being changed on
// another branch, so its import moves to ./sandbox/sandbox-payments with that change, and this
// file goes then.
export { abandonCheckout, findCheckout, payCheckout, type CheckoutRow } from './sandbox/sandbox-payments';
