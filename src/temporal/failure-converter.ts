import { DefaultFailureConverter } from '@temporalio/common';

// Loaded by path on both sides (clients, and the workflow sandbox through the bundle): failure
// messages and stack traces travel as an encoded payload, which the payload codec encrypts.
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
