// The soak's report: counts, HTTP statuses and latencies, workflows by type and status, the faults
// injected, and every broken invariant, as data and as the text bench/soak.ts prints.
import { countBy, type Findings } from './soak-invariants';
import type { HttpStat, Report } from './soak-model';

export function soakReport(o: {
  seed: number;
  findings: Findings;
  http: HttpStat[];
  workflows: Record<string, number>;
  faults?: string[];
}): Report {
  const { counts, violations: v } = o.findings;
  const statuses = countBy(o.http, (h) => String(h.status));
  const latencies = o.http.map((h) => h.ms).sort((a, b) => a - b);
  counts['http requests'] = o.http.length;
  counts['http p50 ms'] = latencies[Math.floor(latencies.length / 2)] ?? 0;
  counts['http p99 ms'] = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
  counts['http max ms'] = latencies[latencies.length - 1] ?? 0;
  // Order placement alone, answered: the mixed load's latency goal is on it (p99 against p50).
  // By payment mode too: an intent order's placement includes the provider's checkout call.
  const placed = o.http.filter((h) => h.method === 'POST' && h.path === '/orders' && h.status === 200);
  const groups: Record<string, HttpStat[]> = {
    '': placed,
    ' balance': placed.filter((h) => h.payment === 'balance'),
    ' intent': placed.filter((h) => h.payment === 'intent'),
  };
  for (const [label, stats] of Object.entries(groups)) {
    const ms = stats.map((h) => h.ms).sort((a, b) => a - b);
    if (!ms.length) continue;
    counts[`order placement${label} (POST /orders, 200) p50 ms`] = ms[Math.floor(ms.length / 2)];
    counts[`order placement${label} (POST /orders, 200) p99 ms`] = ms[Math.floor(ms.length * 0.99)];
  }

  const row = ([k, n]: [string, number | string]) => `  ${k.padEnd(58)} ${n}`;
  const lines = [`soak report (seed ${o.seed})`, '', 'counts:'];
  lines.push(
    ...Object.keys(counts)
      .sort()
      .map((k) => row([k, counts[k]])),
  );
  lines.push('', 'http statuses:', ...Object.entries(statuses).map(row));
  lines.push('', 'workflows:', ...Object.entries(o.workflows).sort().map(row));
  if (o.faults?.length) lines.push('', 'faults injected:', ...o.faults.map((f) => `  ${f}`));
  lines.push('', v.length ? `BROKEN INVARIANTS (${v.length}):` : 'every invariant holds', ...v.map((x) => `  ✗ ${x}`));
  return { seed: o.seed, counts, statuses, violations: v, workflows: o.workflows, text: lines.join('\n') };
}
