import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000000Initial } from './Migration20261121000000Initial';

export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000000Initial', class: Migration20261121000000Initial },
];
