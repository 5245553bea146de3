// `npm run build`, after tsc: writes the workflow bundle beside the compiled code
// (dist/workflow-bundle.js), which production workers load instead of bundling at start.
import { writeWorkflowBundle } from './temporal/workflow-bundle';

writeWorkflowBundle().then(
  (path) => process.stdout.write(`workflow bundle written to ${path}\n`),
  (err) => {
    process.stderr.write(`cannot bundle the workflow code: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
