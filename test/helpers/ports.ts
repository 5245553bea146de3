// Ports for servers that a test hands to a child process, which binds them later: below the
// kernel's ephemeral range, checked free, never handed out twice by one process (src/dev/ports.ts,
// which the production Temporal server's own ports come from too).
export { freeLowPort as freePort } from '../../src/dev/ports';
