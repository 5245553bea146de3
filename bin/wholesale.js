#!/usr/bin/env node
// `npx wholesale ...`: the operator command (compiled under dist/ in production, see run.js).
require('./run.js').runEntry('cli');
