import { z } from 'zod';

// The settings of admission control (src/services/admission.ts) and of the worker heartbeats it
// reads (src/services/worker-heartbeat.ts), beside the checks that tie them together.

const int = (def: number, min: number) => z.coerce.number().int().min(min).default(def);

export const admissionVariables = {
  // `false` lets every placement through (the bare pipeline, for a benchmark or an incident).
  ADMISSION_CONTROL: z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .default('true')
    .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  // Placements should finish within this (the 90th percentile of each window of this length):
  // the limit grows while they do and shrinks when they do not.
  ADMISSION_LATENCY_TARGET_MS: int(600, 10),
  // Latency first: how many placements (× log10 of the level) may queue in a process, measured
  // against what one takes without a queue, before the level shown under load stops growing; twice
  // that brings it down. 0 (the default): in time is enough, for throughput at the peak.
  ADMISSION_QUEUE_ALLOWANCE: z.coerce.number().min(0).default(0),
  ADMISSION_INITIAL_LIMIT: int(100, 4),
  ADMISSION_MAX_LIMIT: int(1000, 4),
  // The share of the limit one account may hold in flight while other accounts place too (past its
  // fair part it also leaves the others the room they held lately).
  ADMISSION_ACCOUNT_SHARE: z.coerce.number().gt(0).max(1).default(0.8),
  // Workers reporting their workflow tasks waiting longer than this make every API process back off.
  ADMISSION_WORKER_QUEUE_MS: int(500, 1),
  // Each worker process beats this often; a beat older than WORKER_HEARTBEAT_STALE_MS means gone.
  WORKER_HEARTBEAT_MS: int(500, 50),
  WORKER_HEARTBEAT_STALE_MS: int(1500, 100),
};

type AdmissionVariables = { [K in keyof typeof admissionVariables]: z.infer<(typeof admissionVariables)[K]> };

export function admissionProblems(c: AdmissionVariables): string[] {
  const problems: string[] = [];
  if (c.WORKER_HEARTBEAT_STALE_MS < 2 * c.WORKER_HEARTBEAT_MS) {
    problems.push(
      '  WORKER_HEARTBEAT_STALE_MS: must be at least twice WORKER_HEARTBEAT_MS, or one late beat would count a live worker as gone',
    );
  }
  if (c.ADMISSION_INITIAL_LIMIT > c.ADMISSION_MAX_LIMIT)
    problems.push('  ADMISSION_INITIAL_LIMIT: must not be above ADMISSION_MAX_LIMIT');
  return problems;
}
