/** Lengths and counts the API bodies are held to (docs/LIMITS.md), beside the claim caps of claim-limits.ts. */
import { MAX_CLAIM_KEY, MAX_CLAIM_VALUE, MAX_CLAIMS } from './claim-limits.js';

/** The longest relayed-reason code an agent may report in its lease body. */
export const REASON_CODE_MAX = 32;

export const BODY_LIMITS = {
  nameMax: 63,
  displayNameMax: 128,
  descriptionMax: 256,
  claimsMax: MAX_CLAIMS,
  claimKeyMax: MAX_CLAIM_KEY,
  claimValueMax: MAX_CLAIM_VALUE,
  agentVersionMax: 64,
  durationTextMax: 32,
  reasonCodeMax: REASON_CODE_MAX,
} as const;
