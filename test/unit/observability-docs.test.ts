import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { registry, workerUpGauge } from '../../src/metrics/registry';
import '../../src/metrics/endpoint';

// Issue 16 item 4: the runbook's alerts and the Grafana dashboard are built on metrics the
// service really exports; a renamed metric fails here instead of silently muting an alert.
const root = resolve(__dirname, '..', '..');
workerUpGauge();
const exported = new Set(registry.getMetricsAsArray().map((m) => m.name));
// What the Temporal core exports (checked against a running worker's exporter).
const CORE = new Set([
  'temporal_num_pollers',
  'temporal_worker_task_slots_available',
  'temporal_worker_task_slots_used',
  'temporal_request_latency',
  'temporal_request_total',
]);

const metricNames = (text: string) => [
  ...new Set(
    [...text.matchAll(/\b((?:wholesale|temporal)_[a-z_]+)\b/g)].map((m) => m[1].replace(/_(bucket|sum|count)$/, '')),
  ),
];

test.each([
  [
    'the dashboard',
    () => {
      const dashboard = JSON.parse(readFileSync(resolve(root, 'docs', 'grafana-dashboard.json'), 'utf8'));
      const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
      expect(exprs.length).toBeGreaterThan(20);
      return exprs.join('\n');
    },
  ],
  [
    'the runbook alerts',
    () => {
      const runbook = readFileSync(resolve(root, 'docs', 'runbook.md'), 'utf8');
      const rules = /```yaml\n([\s\S]*?)```/.exec(runbook.slice(runbook.indexOf('**Alerts**')))![1];
      for (const alert of [
        'OrdersNeedAttention',
        'WebhooksFallingBehind',
        'WorkerNotPolling',
        'ServerErrors',
        'PaymentSyncErrors',
      ])
        expect(rules).toContain(alert);
      expect(runbook).toContain('(grafana-dashboard.json)');
      return rules;
    },
  ],
])('%s only uses metrics the service exports', (_name, text) => {
  const names = metricNames(text());
  expect(names.length).toBeGreaterThan(5);
  for (const name of names) expect([name, exported.has(name) || CORE.has(name)]).toEqual([name, true]);
});
