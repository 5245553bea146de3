import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000000Initial } from './Migration20261121000000Initial';
import { Migration20261122000000WebhookOutbox } from './Migration20261122000000WebhookOutbox';

export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000000Initial', class: Migration20261121000000Initial },
  { name: 'Migration20261122000000WebhookOutbox', class: Migration20261122000000WebhookOutbox },
];
