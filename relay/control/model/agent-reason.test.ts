import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REASON_CODE_MAX } from '../../../shared/api/body-limits.js';
import { isTunnelError, TunnelError } from '../../../shared/errors.js';
import { AGENT_REASONS, RELAYED_REASON_TEXT } from '../../../shared/net/tunnel-endpoint/relayed-reasons.js';
import { parseAgentReason } from './agent-reason.js';

const CODE = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

function refusal(raw: unknown): TunnelError {
  try {
    parseAgentReason(raw);
  } catch (err) {
    if (err instanceof TunnelError) return err;
    throw err;
  }
  throw new Error(`${JSON.stringify(raw)} was taken`);
}

describe('parseAgentReason (the lease body relayedReason)', () => {
  it('keeps every reason only the agent knows; absent or null is none', () => {
    for (const r of AGENT_REASONS) expect(parseAgentReason(r)).toEqual({ reason: r, ignored: false });
    expect(parseAgentReason(undefined)).toEqual({ reason: null, ignored: false });
    expect(parseAgentReason(null)).toEqual({ reason: null, ignored: false });
  });

  it("ignores well-formed codes it does not take, and says so: the hub's own and a newer agent's", () => {
    const hubOnly = Object.keys(RELAYED_REASON_TEXT).filter(
      (r) => !(AGENT_REASONS as readonly string[]).includes(r),
    );
    expect(hubOnly).toContain('no-candidates');
    for (const r of [...hubOnly, 'ipv6-only', 'captive-portal', 'x'])
      expect(parseAgentReason(r)).toEqual({ reason: null, ignored: true });
  });

  it('refuses anything else with BAD_INPUT naming the value, bounded', () => {
    const long = 'a'.repeat(5_000);
    const e = refusal(long);
    expect(e.code).toBe('BAD_INPUT');
    expect(e.message).toContain('body.relayedReason');
    expect(e.message.length).toBeLessThan(200);
    expect(refusal('<script>').message).toContain('"<script>"');
    expect(refusal('UDP-BLOCKED').message).toContain('"UDP-BLOCKED"');
    expect(refusal('-x').code).toBe('BAD_INPUT');
    expect(refusal('a\u001b[2J').message).toContain('\\u001b');
    expect(refusal(42).message).toContain('a number');
    expect(refusal(['443-only']).message).toContain('a list');
    expect(refusal({}).message).toContain('an object');
  });

  it('property: any input is a known agent reason, null, or a BAD_INPUT under 200 characters', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 80 }),
          fc.constantFrom(...AGENT_REASONS, ...Object.keys(RELAYED_REASON_TEXT)),
          fc.stringMatching(/^[a-z0-9-]{1,40}$/),
          fc.anything(),
        ),
        (raw) => {
          let out: string | null;
          let ignored: boolean;
          try {
            ({ reason: out, ignored } = parseAgentReason(raw));
          } catch (err) {
            expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
            expect(String(err).length).toBeLessThan(250);
            const wellFormed = typeof raw === 'string' && raw.length <= REASON_CODE_MAX && CODE.test(raw);
            expect(wellFormed).toBe(false);
            return;
          }
          if (out === null) {
            const none = raw === undefined || raw === null;
            expect(none || !(AGENT_REASONS as readonly unknown[]).includes(raw)).toBe(true);
            expect(ignored).toBe(!none);
          } else {
            expect(ignored).toBe(false);
            expect(out).toBe(raw);
            expect(AGENT_REASONS).toContain(out);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
