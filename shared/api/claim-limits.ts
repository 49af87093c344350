/**
 * Caps on the key/value claims an agent reports (OCM caps claims at 20). One definition for the agent's
 * --claim parser and the relay's request schemas, so input the CLI accepts is never refused at registration.
 */
export const MAX_CLAIMS = 20;
export const MAX_CLAIM_KEY = 64;
export const MAX_CLAIM_VALUE = 1024;
