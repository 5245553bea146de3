import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseAllDocuments, parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { OPERATOR_XPUB } from '../helpers/production';
import { projectRoot } from '../helpers/production-app';

// The Helm chart (deploy/helm/wholesale, its README): `helm lint --strict` passes, and what
// `helm template` renders, with the default values (with and without KEDA in the cluster) and with
// the Temporal Cloud values, decodes strictly into the Kubernetes API types, KEDA's ScaledObject
// and TriggerAuthentication and the Prometheus Operator's types (tools/k8s-check), so a misspelt
// field fails. The settings it gives the processes pass the service's production checks with the
// Secret its README creates. helm v3.22.0 and the checker are built once per machine from the Go
// module proxy (scripts/ensure-deploy-tools.mjs).
const chart = join(projectRoot, 'deploy', 'helm', 'wholesale');
const cloudValues = join(chart, 'values-temporal-cloud.yaml');
const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8'));
// The Kubernetes version whose API types the checker decodes into (k8s.io/api v0.31).
const KUBE = ['--kube-version', '1.31.0'];
const KEDA = ['--api-versions', 'keda.sh/v1alpha1/ScaledObject'];

let tools: { helm: string; check: string } | undefined;
let unavailable: string | undefined;

beforeAll(async () => {
  const r = await new Promise<{ code: number | null; out: string; err: string }>((ok) => {
    const child = spawn(process.execPath, [join(projectRoot, 'scripts', 'ensure-deploy-tools.mjs')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    child.once('close', (code) => ok({ code, out, err }));
  });
  if (r.code === 0) tools = JSON.parse(r.out);
  else unavailable = r.err.trim();
}, 20 * 60_000);

function skipped(): boolean {
  // Only where neither the tools nor a Go toolchain with the module proxy are at hand.
  if (unavailable) console.warn(`SKIPPED: helm and k8s-check are unavailable: ${unavailable}`);
  return !!unavailable;
}

function helm(args: string[]): string {
  const r = spawnSync(tools!.helm, args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      HELM_CACHE_HOME: '/tmp/wholesale-helm-cache',
      HELM_CONFIG_HOME: '/tmp/wholesale-helm-config',
    },
  });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')} exited ${r.status}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

function check(manifest: string): { code: number | null; out: string } {
  const r = spawnSync(tools!.check, [], { input: manifest, encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  [k: string]: any;
};

const rendered = new Map<string, { text: string; objects: K8sObject[] }>();
function render(args: string[]): { text: string; objects: K8sObject[] } {
  const key = args.join(' ');
  if (!rendered.has(key)) {
    const text = helm(['template', 'wholesale', chart, '--namespace', 'wholesale', ...KUBE, ...args]);
    rendered.set(key, {
      text,
      objects: parseAllDocuments(text)
        .map((d) => d.toJS())
        .filter(Boolean),
    });
  }
  return rendered.get(key)!;
}

const find = (objects: K8sObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);
const kinds = (objects: K8sObject[]) => objects.map((o) => `${o.kind} ${o.metadata.name}`).sort();

/** The Secret of the chart's README, made as it says. */
const SECRET = {
  DATABASE_URL: 'postgres://wholesale:pw@postgres.example.internal:5432/wholesale',
  TEMPORAL_PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  CURSOR_SECRET: randomBytes(32).toString('base64'),
  SESSION_SECRET: randomBytes(32).toString('base64'),
  ADMIN_TOKEN: randomBytes(32).toString('hex'),
  EVM_XPUB: OPERATOR_XPUB,
  EVM_CHAINS: JSON.stringify([
    {
      chainId: 137,
      name: 'Polygon',
      rpcUrls: ['https://polygon.example/key'],
      confirmations: 12,
      tokens: { USDT: { address: '0xc2132D05D31c914a87C6611C10748AEb04B58e8F', decimals: 6 } },
    },
  ]),
};

const cases = [
  { name: 'the default values, KEDA absent', args: [] as string[], keda: false },
  {
    name: 'the default values, KEDA present, monitoring on',
    args: [...KEDA, '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.prometheusRule.enabled=true'],
    keda: true,
  },
  { name: 'the Temporal Cloud values', args: ['-f', cloudValues, ...KEDA], keda: true },
];

test('helm lint --strict passes with the default values and with the Temporal Cloud values', () => {
  if (skipped()) return;
  expect(helm(['lint', '--strict', chart])).toContain('0 chart(s) failed');
  expect(helm(['lint', '--strict', chart, '-f', cloudValues])).toContain('0 chart(s) failed');
});

describe.each(cases)('helm template with $name', ({ args, keda }) => {
  test('every object decodes strictly into its API type', () => {
    if (skipped()) return;
    const { text, objects } = render(args);
    const result = check(text);
    expect({ code: result.code, failures: result.out.split('\n').filter((l) => l.startsWith('FAIL')) }).toEqual({
      code: 0,
      failures: [],
    });
    expect(result.out.split('\n').filter((l) => l.startsWith('ok')).length).toBe(objects.length);
  });

  test('renders the topology: API with HPA, workers on the backlog (KEDA) or CPU, PDBs, the migration hook, NetworkPolicies, no Secret', () => {
    if (skipped()) return;
    const { objects } = render(args);
    const names = kinds(objects);
    for (const o of [
      'Deployment wholesale-api',
      'Deployment wholesale-worker',
      'Service wholesale-api',
      'HorizontalPodAutoscaler wholesale-api',
      'PodDisruptionBudget wholesale-api',
      'PodDisruptionBudget wholesale-worker',
      'Job wholesale-migrate',
      'NetworkPolicy wholesale-api',
      'NetworkPolicy wholesale-worker',
      'ConfigMap wholesale',
    ]) {
      expect(names).toContain(o);
    }
    expect(names.includes('ScaledObject wholesale-worker')).toBe(keda);
    expect(names.includes('HorizontalPodAutoscaler wholesale-worker')).toBe(!keda);
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const job = find(objects, 'Job', 'wholesale-migrate')!;
    expect(job.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade' });
    expect(job.spec.template.spec.containers[0].command).toEqual(['node', 'dist/src/migrate.js']);
    // A pre-install hook runs before the release's own objects exist: it needs none of them (its
    // settings are inline, its Secret and the namespace's default ServiceAccount exist beforehand).
    expect(job.spec.template.spec.serviceAccountName).toBeUndefined();
    expect(job.spec.template.spec.containers[0].envFrom).toEqual([{ secretRef: { name: values.existingSecret } }]);
  });

  test('probes /healthz and /readyz on METRICS_PORT, and gives each process more grace than its shutdown takes', () => {
    if (skipped()) return;
    const { objects } = render(args);
    const settings = find(objects, 'ConfigMap', 'wholesale')!.data;
    for (const [name, grace] of [
      ['api', 10],
      ['worker', 20 + 10],
    ] as const) {
      const pod = find(objects, 'Deployment', `wholesale-${name}`)!.spec.template.spec;
      const container = pod.containers[0];
      expect(container.command).toEqual(['node', `dist/src/${name}.js`]);
      expect(container.ports.find((p: { name: string }) => p.name === 'metrics').containerPort).toBe(
        Number(settings.METRICS_PORT),
      );
      expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
      expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
      // The API finishes its requests (a hung one is cut at 10 s); the worker its activities (20 s), then closes.
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(grace);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(container.envFrom).toEqual([
        { configMapRef: { name: 'wholesale' } },
        { secretRef: { name: values.existingSecret } },
      ]);
    }
  });

  test("the settings of every process (ConfigMap, and the Job's inline copy) with the README's Secret pass the production checks", () => {
    if (skipped()) return;
    const { objects } = render(args);
    const settings = find(objects, 'ConfigMap', 'wholesale')!.data as Record<string, string>;
    // Nothing secret in the ConfigMap.
    expect(
      Object.keys(settings).filter((k) => /SECRET|KEY|TOKEN|PASSWORD|DATABASE_URL|XPUB|EVM_CHAINS/.test(k)),
    ).toEqual([]);
    const job = find(objects, 'Job', 'wholesale-migrate')!.spec.template.spec.containers[0];
    expect(Object.fromEntries(job.env.map((e: { name: string; value: string }) => [e.name, e.value]))).toEqual(
      settings,
    );
    const cloud = args.includes(cloudValues);
    const config = loadConfig({
      ...settings,
      ...SECRET,
      ...(cloud ? { TEMPORAL_API_KEY: 'a-temporal-cloud-api-key' } : {}),
    });
    expect(config.NODE_ENV).toBe('production');
    expect(config.devSecrets).toEqual([]);
    expect(config.MIGRATE_ON_START).toBe(false);
    expect(config.TEMPORAL_TASK_QUEUE).toBe(values.temporal.taskQueue);
    expect(config.TEMPORAL_ALLOW_PLAINTEXT).toBe(!cloud);
  });

  if (keda) {
    test("the ScaledObject scales the worker Deployment on its task queue's workflow and activity backlogs", () => {
      if (skipped()) return;
      const { objects } = render(args);
      const so = find(objects, 'ScaledObject', 'wholesale-worker')!;
      const settings = find(objects, 'ConfigMap', 'wholesale')!.data;
      expect(so.spec.scaleTargetRef).toEqual({ name: 'wholesale-worker' });
      expect(so.spec.triggers).toEqual([
        expect.objectContaining({
          type: 'temporal',
          metadata: expect.objectContaining({
            endpoint: settings.TEMPORAL_ADDRESS,
            namespace: settings.TEMPORAL_NAMESPACE,
            taskQueue: settings.TEMPORAL_TASK_QUEUE,
            queueTypes: 'workflow,activity',
            targetQueueSize: String(values.worker.autoscaling.targetQueueSize),
          }),
        }),
      ]);
      if (args.includes(cloudValues)) {
        expect(so.spec.triggers[0].authenticationRef).toEqual({ name: 'wholesale-temporal' });
        expect(find(objects, 'TriggerAuthentication', 'wholesale-temporal')!.spec.secretTargetRef).toEqual([
          { parameter: 'apiKey', name: values.existingSecret, key: 'TEMPORAL_API_KEY' },
        ]);
      }
    });
  }
});

test("the schema owner's Secret (DATABASE_MIGRATION_URL) reaches the migration Job alone", () => {
  if (skipped()) return;
  const { objects } = render(['--set', 'migrations.secret=wholesale-owner']);
  expect(find(objects, 'Job', 'wholesale-migrate')!.spec.template.spec.containers[0].envFrom).toEqual([
    { secretRef: { name: values.existingSecret } },
    { secretRef: { name: 'wholesale-owner' } },
  ]);
  for (const name of ['api', 'worker']) {
    expect(JSON.stringify(find(objects, 'Deployment', `wholesale-${name}`))).not.toContain('wholesale-owner');
  }
});

test('the PrometheusRule holds the runbook\'s alert rules, and the ServiceMonitor labels them job="wholesale"', () => {
  if (skipped()) return;
  const { objects } = render(cases[1].args);
  const runbook = readFileSync(join(projectRoot, 'docs', 'runbook.md'), 'utf8');
  const rules = parse(/```yaml\n([\s\S]*?)```/.exec(runbook.slice(runbook.indexOf('**Alerts**')))![1]);
  expect(find(objects, 'PrometheusRule', 'wholesale')!.spec).toEqual(rules);
  const monitor = find(objects, 'ServiceMonitor', 'wholesale')!;
  expect(monitor.spec.jobLabel).toBe('app.kubernetes.io/part-of');
  for (const service of objects.filter((o) => o.kind === 'Service'))
    expect(service.metadata).toMatchObject({ labels: { 'app.kubernetes.io/part-of': 'wholesale' } });
});

test.each([
  [
    'ScaledObject field',
    'minReplicaCount:',
    'minReplicasCount:',
    /ScaledObject wholesale-worker: .*unknown field "minReplicasCount"/,
  ],
  [
    'Deployment field',
    'readinessProbe:',
    'readynessProbe:',
    /Deployment wholesale-api: .*unknown field "readynessProbe"/,
  ],
  [
    'Temporal trigger key',
    'targetQueueSize:',
    'targetQueSize:',
    /ScaledObject wholesale-worker: temporal trigger: metadata the scaler does not read: targetQueSize/,
  ],
])('a misspelt %s fails the check', (_what, from, to, message) => {
  if (skipped()) return;
  const { text } = render(cases[1].args);
  const result = check(text.replace(from, to));
  expect(result.code).toBe(1);
  expect(result.out).toMatch(message);
});
