import { defineFaultTests } from './faults';

// The fault tests on the production Temporal server (SQL persistence on the topology's Postgres),
// the one deployments run. TOPOLOGY_TEMPORAL=dev runs them on the dev server (`npm start`'s)
// instead, and TOPOLOGY_TEMPORAL=all on both, one after the other in this file so that the two
// topologies never share the machine's two cores (about four and a half minutes each on CI's
// machine, which is why CI runs one).
const chosen = process.env.TOPOLOGY_TEMPORAL ?? 'server';
if (chosen === 'dev' || chosen === 'all') defineFaultTests('dev');
if (chosen === 'server' || chosen === 'all') defineFaultTests('server');
