import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import type { Providers } from '../providers/all-providers';
import type { PlacementGate } from '../services/admission';
import type { TemporalHandle } from '../temporal/client';
import type { AnswerKey } from '../temporal/sealed-answer';
import type { WorkerHealth } from '../temporal/worker-supervisor';

/**
 * What every request handler may use: one ORM, one Temporal client, the providers the composition
 * root built (src/providers/all-providers.ts), config and the logger.
 */
export interface AppContext {
  orm: Orm;
  temporal: TemporalHandle;
  providers: Providers;
  config: Config;
  logger: Logger;
  /** Admission control of placements (absent: every placement is let through). */
  admission?: PlacementGate;
  /** This process's key for placements' sealed answers (absent: their secrets are read from Postgres). */
  answerKey?: AnswerKey;
  /** The in-process Temporal worker, where this process runs one (for /healthz). */
  worker?: { health(): WorkerHealth };
}
