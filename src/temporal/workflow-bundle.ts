import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { WorkflowBundleOption } from '@temporalio/worker';
import { ConfigError, type Config } from '../config';
import { bundleWorkflows } from './temporal-worker';

/**
 * Where `npm run build` writes the workflow bundle: the root of the compiled tree
 * (dist/workflow-bundle.js). Run from the TypeScript sources the same path is the repository's
 * root, where nothing writes one, so development always bundles the code it is running.
 */
export const PREBUILT_BUNDLE_PATH = resolve(__dirname, '..', '..', 'workflow-bundle.js');

/**
 * The worker's workflow code: the bundle built ahead of time when there is one, so every replica
 * runs the same code and starts without webpack. Production never bundles at start: a build
 * without its bundle is refused rather than run with whatever the image happens to hold.
 */
export async function workerBundle(
  config: Pick<Config, 'NODE_ENV'>,
  path = PREBUILT_BUNDLE_PATH,
): Promise<WorkflowBundleOption> {
  if (existsSync(path)) return { codePath: path };
  if (config.NODE_ENV === 'production') {
    throw new ConfigError(
      `Invalid configuration:\n  NODE_ENV: production runs the prebuilt workflow bundle, and ${path} is missing: run \`npm run build\``,
    );
  }
  return bundleWorkflows();
}

/** Bundles the workflow code with the worker's own options and writes it for `workerBundle`. */
export async function writeWorkflowBundle(path = PREBUILT_BUNDLE_PATH): Promise<string> {
  const { code } = await bundleWorkflows();
  writeFileSync(path, code);
  return path;
}
