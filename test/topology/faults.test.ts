import { defineFaultTests } from './faults';

// The fault tests on the Temporal dev server, then on the production
// Temporal server (SQL persistence on the topology's Postgres), one after the other in this file so
// that the two topologies never share the machine's two cores. TOPOLOGY_TEMPORAL=dev|server runs one.
const only = process.env.TOPOLOGY_TEMPORAL;
if (!only || only === 'dev') defineFaultTests('dev');
if (!only || only === 'server') defineFaultTests('server');
