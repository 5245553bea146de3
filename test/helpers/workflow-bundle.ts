import type { WorkflowBundleOption } from '@temporalio/worker';
import { bundleWorkflows } from '../../src/temporal/temporal-worker';

/**
 * The workflow code a test's worker runs: the bundle test/global-setup.mjs wrote once for the whole
 * run from the same sources (TEST_WORKFLOW_BUNDLE), so each test file does not run webpack again;
 * outside that setup, one bundled here.
 */
export function testWorkflowBundle(): Promise<WorkflowBundleOption> {
  const codePath = process.env.TEST_WORKFLOW_BUNDLE;
  return codePath ? Promise.resolve({ codePath }) : bundleWorkflows();
}
