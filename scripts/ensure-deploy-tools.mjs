#!/usr/bin/env node
// Finds or builds what the deployment tests need (test/deploy/helm.test.ts), once per machine, the
// way ensure-temporal-server.mjs builds the Temporal binaries:
//   - helm, pinned (helm.sh/helm/v3 v3.22.0): $HELM_PATH, else the per-user cache
//     (~/.cache/wholesale/helm-<version>/bin), else `go install` into it;
//   - k8s-check (tools/k8s-check: strict decoding against k8s.io/api, KEDA and Prometheus Operator
//     types): $K8S_CHECK_PATH, else the cache under a hash of its sources, else built into it.
// Prints {"helm": path, "check": path} on stdout; without them and without Go, a reason on stderr
// and exit 3.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executable, findGo, goInstall } from './go-install.mjs';

export const HELM_VERSION = '3.22.0';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const checkSources = join(root, 'tools', 'k8s-check');

function cacheDir(name) {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'wholesale', name, 'bin');
}

/** The checker's cache folder is named after its sources, so a change to them builds it again. */
function checkCacheDir() {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(join(checkSources, file)));
  return cacheDir(`k8s-check-${hash.digest('hex').slice(0, 12)}`);
}

async function ensure({ override, binDir, binary, build }) {
  if (override) {
    if (!executable(override)) throw new Error(`${override} is not an executable`);
    return override;
  }
  const path = join(binDir, binary);
  if (executable(path)) return path;
  const go = findGo();
  if (!go) throw new Error(`no ${binary} in ${binDir} and no Go toolchain to build it (install Go 1.23 or newer)`);
  mkdirSync(binDir, { recursive: true });
  await build(go, binDir);
  if (!executable(path)) throw new Error(`go install succeeded but ${path} is missing`);
  return path;
}

/** Resolves to the paths of helm and k8s-check, building what is missing; rejects with the reason. */
export async function ensureDeployTools({ log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  const helm = await ensure({
    override: process.env.HELM_PATH,
    binDir: cacheDir(`helm-${HELM_VERSION}`),
    binary: 'helm',
    build: (go, gobin) =>
      goInstall({
        go,
        gobin,
        log,
        packages: [`helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}`],
        what: `helm v${HELM_VERSION}`,
        why: 'for the Helm chart test: ',
        usually: 'about 6 minutes',
      }),
  });
  const check = await ensure({
    override: process.env.K8S_CHECK_PATH,
    binDir: checkCacheDir(),
    binary: 'k8s-check',
    build: (go, gobin) =>
      goInstall({
        go,
        gobin,
        log,
        cwd: checkSources,
        packages: ['.'],
        what: 'k8s-check (tools/k8s-check)',
        why: 'for the Helm chart test: ',
        usually: 'about 5 minutes',
      }),
  });
  return { helm, check };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${JSON.stringify(await ensureDeployTools())}\n`);
  } catch (err) {
    process.stderr.write(`ensure-deploy-tools: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(3);
  }
}
