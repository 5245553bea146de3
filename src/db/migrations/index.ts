import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000000Initial } from './Migration20261121000000Initial';
import { Migration20261122000000WebhookOutbox } from './Migration20261122000000WebhookOutbox';
import { Migration20261123000000SandboxCheckouts } from './Migration20261123000000SandboxCheckouts';
import { Migration20261124100000SandboxSupplier } from './Migration20261124100000SandboxSupplier';
import { Migration20261124110000SupportCodeBatches } from './Migration20261124110000SupportCodeBatches';
import { Migration20261130000000AccountArea } from './Migration20261130000000AccountArea';
import { Migration20261201000000PlacementId } from './Migration20261201000000PlacementId';
import { Migration20261201010000OrderListIndex } from './Migration20261201010000OrderListIndex';
import { Migration20261202000000RedemptionSecrets } from './Migration20261202000000RedemptionSecrets';
import { Migration20261203000000EvmCheckouts } from './Migration20261203000000EvmCheckouts';
import { Migration20261204000000SupplierPurchases } from './Migration20261204000000SupplierPurchases';
import { Migration20261205000000Reconciler } from './Migration20261205000000Reconciler';
import { Migration20261205010000DeliveryAttemptClaim } from './Migration20261205010000DeliveryAttemptClaim';
import { Migration20261206000000OperatorQueue } from './Migration20261206000000OperatorQueue';
import { Migration20261207000000SupplierCatalog } from './Migration20261207000000SupplierCatalog';
import { Migration20261208010000DeliveryAttemptBudget } from './Migration20261208010000DeliveryAttemptBudget';
import { Migration20261209000000StaffConsole } from './Migration20261209000000StaffConsole';

export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000000Initial', class: Migration20261121000000Initial },
  { name: 'Migration20261122000000WebhookOutbox', class: Migration20261122000000WebhookOutbox },
  { name: 'Migration20261123000000SandboxCheckouts', class: Migration20261123000000SandboxCheckouts },
  { name: 'Migration20261124100000SandboxSupplier', class: Migration20261124100000SandboxSupplier },
  { name: 'Migration20261124110000SupportCodeBatches', class: Migration20261124110000SupportCodeBatches },
  { name: 'Migration20261130000000AccountArea', class: Migration20261130000000AccountArea },
  { name: 'Migration20261201000000PlacementId', class: Migration20261201000000PlacementId },
  { name: 'Migration20261201010000OrderListIndex', class: Migration20261201010000OrderListIndex },
  { name: 'Migration20261202000000RedemptionSecrets', class: Migration20261202000000RedemptionSecrets },
  { name: 'Migration20261203000000EvmCheckouts', class: Migration20261203000000EvmCheckouts },
  { name: 'Migration20261204000000SupplierPurchases', class: Migration20261204000000SupplierPurchases },
  { name: 'Migration20261205000000Reconciler', class: Migration20261205000000Reconciler },
  { name: 'Migration20261205010000DeliveryAttemptClaim', class: Migration20261205010000DeliveryAttemptClaim },
  { name: 'Migration20261206000000OperatorQueue', class: Migration20261206000000OperatorQueue },
  { name: 'Migration20261207000000SupplierCatalog', class: Migration20261207000000SupplierCatalog },
  { name: 'Migration20261208010000DeliveryAttemptBudget', class: Migration20261208010000DeliveryAttemptBudget },
  { name: 'Migration20261209000000StaffConsole', class: Migration20261209000000StaffConsole },
];
