import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FirstHopSources, firstHopMtu, routeInterface } from './first-hop-mtu.js';

/** /proc/net/route as Linux writes it (addresses little-endian hex). */
const TABLE = [
  'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
  'eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0',
  'eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
  'jumbo0\t0000000A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0',
  'jumbo1\t0000000A\t00000000\t0001\t0\t0\t5\t0000FFFF\t0\t0\t0',
  'down0\t0001000A\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0',
].join('\n');

const u32 = (ip: string) => ip.split('.').reduce((n, p) => n * 256 + Number(p), 0);

const sources = (mtus: Record<string, number>, local: string[] = []): FirstHopSources => ({
  routes: () => TABLE,
  interfaceMtu: (name) => mtus[name],
  localAddresses: () => local,
});

describe('first-hop MTU', () => {
  it('picks the up route with the longest prefix, then the lowest metric', () => {
    expect(routeInterface(TABLE, u32('192.0.2.7'))).toBe('eth0');
    expect(routeInterface(TABLE, u32('10.0.1.9'))).toBe('jumbo0'); // down0 is more specific but not up
    expect(routeInterface(TABLE, u32('198.51.100.1'))).toBe('eth0'); // the default route
    expect(routeInterface(TABLE.split('\n').slice(0, 1).join('\n'), u32('10.0.0.1'))).toBeUndefined();
  });

  it("gives the MTU of the route's interface; this host's own addresses leave by lo", () => {
    const s = sources({ eth0: 1_500, jumbo0: 9_000, lo: 65_536 }, ['192.0.2.5']);
    expect(firstHopMtu('10.0.3.4', s)).toBe(9_000);
    expect(firstHopMtu('::ffff:10.0.3.4', s)).toBe(9_000);
    expect(firstHopMtu('203.0.113.9', s)).toBe(1_500);
    expect(firstHopMtu('127.0.0.1', s)).toBe(65_536);
    expect(firstHopMtu('192.0.2.5', s)).toBe(65_536);
    // IPv6, garbage, and an unreadable table: unknown (the path stays at its base).
    expect(firstHopMtu('2001:db8::1', s)).toBeUndefined();
    expect(firstHopMtu('not an address', s)).toBeUndefined();
    const broken: FirstHopSources = {
      ...s,
      routes: () => {
        throw new Error('EACCES');
      },
    };
    expect(firstHopMtu('10.0.3.4', broken)).toBeUndefined();
  });

  it('reads this machine: loopback is lo', () => {
    expect(firstHopMtu('127.0.0.1')).toBeGreaterThanOrEqual(1_500);
  });

  it('never throws on random route tables, and only names an interface the table lists (property)', () => {
    const line = fc
      .array(
        fc.oneof(
          fc.integer({ min: 0, max: 0xffffffff }).map((n) => n.toString(16).padStart(8, '0')),
          fc.string({ maxLength: 10 }),
        ),
        {
          maxLength: 12,
        },
      )
      .map((f) => f.join('\t'));
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 8 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        (lines, addr) => {
          const table = ['header', ...lines].join('\n');
          const iface = routeInterface(table, addr);
          if (iface !== undefined) expect(lines.some((l) => l.trim().split(/\s+/)[0] === iface)).toBe(true);
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
