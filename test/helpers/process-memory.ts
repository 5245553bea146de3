import { readFileSync, writeFileSync } from 'node:fs';

// A child process's resident memory as Linux counts it (/proc/<pid>/status): VmRSS now, and VmHWM,
// its peak since the last reset. Writing 5 to /proc/<pid>/clear_refs resets the peak to the
// current RSS (Linux 4.0 and later), so a peak can be measured for one stretch of work, after the
// process's start-up (a worker's workflow bundle costs more than anything it does later).

const kB = (status: string, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
const status = (pid: number) => readFileSync(`/proc/${pid}/status`, 'utf8');

export const rssMiB = (pid: number) => kB(status(pid), 'VmRSS') / 1024;
export const peakMiB = (pid: number) => kB(status(pid), 'VmHWM') / 1024;

/** Starts a measurement: the peak is reset to now; returns the RSS it starts from. */
export function resetPeak(pid: number): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return rssMiB(pid);
}
