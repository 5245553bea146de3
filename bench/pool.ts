// The load loop the benches share: N tasks at concurrency C, each timed; and their HTTP client.
import { readFileSync } from 'node:fs';
import { request, type Agent, type IncomingHttpHeaders } from 'node:http';

export interface Result {
  name: string;
  seconds: number;
  latencies: number[];
  failures: number;
}

/** Runs task(0..n-1), c at a time; a task that answers false or throws counts as a failure. */
export async function runPool(
  name: string,
  n: number,
  c: number,
  task: (i: number) => Promise<boolean>,
): Promise<Result> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < n) {
        const i = next++;
        const t0 = performance.now();
        const ok = await task(i).catch(() => false);
        latencies.push(performance.now() - t0);
        if (!ok) failures++;
      }
    }),
  );
  return { name, seconds: (performance.now() - started) / 1000, latencies, failures };
}

/** CPU seconds (user + system) a process has used, from /proc. */
export function procCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The p-th percentile of latencies already sorted ascending. */
export const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/**
 * POSTs `body` on `agent` (node:http keep-alive: fetch's own CPU per request is several times
 * this client's, and a bench shares the machine with the stack it measures); resolves the answer's
 * status and headers once its body has been read.
 */
export function post(
  agent: Agent,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
