import { Command } from 'commander';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkStunServersWithEgress,
  MAX_AGENT_STUN_SERVERS,
  stunServerOption,
} from './stun-server-option.js';

/** The option's value after parsing `args` (throws what the option's parser throws). */
function parse(args: string[]): string[] | undefined {
  const cmd = new Command().exitOverride().addOption(stunServerOption());
  cmd.parse(args, { from: 'user' });
  return cmd.opts<{ stunServer?: string[] }>().stunServer;
}

const badInput = (text: string) =>
  expect.objectContaining({ code: 'BAD_INPUT', message: expect.stringContaining(text) });

describe('tunnel-client --stun-server', () => {
  it('collects repeated servers as host:port, IPv6 in brackets', () => {
    expect(parse([])).toBeUndefined();
    expect(parse(['--stun-server', 'stun.example.net:3478', '--stun-server', '[2001:db8::1]:19302'])).toEqual(
      ['stun.example.net:3478', '[2001:db8::1]:19302'],
    );
  });

  it('refuses a bad value, a duplicate or too many, naming the value', () => {
    expect(() => parse(['--stun-server', 'stun'])).toThrow(badInput('--stun-server "stun"'));
    expect(() => parse(['--stun-server', 'a:1', '--stun-server', 'a:1'])).toThrow(
      badInput('"a:1" is given twice'),
    );
    const many = Array.from({ length: MAX_AGENT_STUN_SERVERS + 1 }, (_, i) => [
      '--stun-server',
      `s${i}:1`,
    ]).flat();
    expect(() => parse(many)).toThrow(badInput(`at most ${MAX_AGENT_STUN_SERVERS}`));
    expect(() => checkStunServersWithEgress(['s:1'], '443-only')).toThrow(badInput('--egress 443-only'));
    expect(() => checkStunServersWithEgress(['s:1'], 'auto')).not.toThrow();
    expect(() => checkStunServersWithEgress([], '443-only')).not.toThrow();
  });

  it('property: a value is taken as one host:port or refused with BAD_INPUT, never another error', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (v) => {
        let out: string[] | undefined;
        try {
          out = parse(['--stun-server', v]);
        } catch (err) {
          expect(err).toEqual(badInput('--stun-server'));
          return;
        }
        expect(out).toHaveLength(1);
        expect(parse(['--stun-server', out?.[0] ?? ''])).toEqual(out);
      }),
    );
  });
});
