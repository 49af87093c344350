import { describe, expect, it } from 'vitest';
import { FakeClock, type TimerHandle } from '../../clock.js';
import type { DiscoAddress } from '../disco/disco-codec.js';
import { PathSelector, type PathSelectorOptions, type Probe, type Route } from './path-selector.js';
import { DEFAULT_PATH_TIMERS, pathTimers } from './path-timers.js';

const A: DiscoAddress = { host: '198.51.100.7', port: 41641 };
const B: DiscoAddress = { host: '10.0.0.7', port: 41641 };

/**
 * One selector and a simulated peer: the selector's owner runs it on its own timer (nextWakeAt), the peer
 * answers each ping after `rttMs` when its link is up and `deliver()` lets the ping through.
 */
class Sim {
  readonly clock = new FakeClock();
  readonly sel: PathSelector;
  readonly switches: { at: number; route: Route }[] = [];
  readonly sent: { at: number; probe: Probe }[] = [];
  up = new Map<string, boolean>([['relay', true]]);
  rttMs = new Map<string, number>([['relay', 40]]);
  deliver: (p: Probe, at: number) => boolean = () => true;
  #timer: TimerHandle | undefined;
  #traffic: TimerHandle | undefined;
  #txid = 0;

  constructor(o: Partial<PathSelectorOptions> = {}) {
    this.sel = new PathSelector({
      clock: this.clock,
      newTxid: () => Buffer.from((++this.#txid).toString(16).padStart(24, '0'), 'hex'),
      onRouteChange: () => this.switches.push({ at: this.clock.now(), route: this.sel.route }),
      ...o,
    });
  }

  static key(p: Probe): string {
    return p.target.via === 'relay' ? 'relay' : `${p.target.to.host}:${p.target.to.port}`;
  }

  link(a: DiscoAddress, up: boolean, rttMs = 20): void {
    this.up.set(`${a.host}:${a.port}`, up);
    this.rttMs.set(`${a.host}:${a.port}`, rttMs);
  }

  /** Runs the owner's loop: poll, send, re-arm at nextWakeAt. */
  poll(): void {
    for (const probe of this.sel.probesDue()) {
      const at = this.clock.now();
      this.sent.push({ at, probe });
      const k = Sim.key(probe);
      if (!this.up.get(k) || !this.deliver(probe, at)) continue;
      this.clock.setTimer(this.rttMs.get(k) ?? 20, () => {
        if (this.up.get(k)) this.sel.pong(probe.txid, probe.target);
        this.poll();
      });
    }
    this.sel.tick();
    this.clock.clearTimer(this.#timer);
    this.#timer = this.clock.setTimer(this.sel.nextWakeAt() - this.clock.now(), () => this.poll());
  }

  /** Traffic every `everyMs` until stopTraffic(). */
  startTraffic(everyMs = 100): void {
    const beat = () => {
      if (this.sel.noteTraffic()) this.poll();
      this.#traffic = this.clock.setTimer(everyMs, beat);
    };
    beat();
  }

  stopTraffic(): void {
    this.clock.clearTimer(this.#traffic);
  }

  /** Advances in small steps, recording the first time `pred` holds (or undefined). */
  until(ms: number, pred: () => boolean): number | undefined {
    const start = this.clock.now();
    while (this.clock.now() - start < ms) {
      if (pred()) return this.clock.now() - start;
      this.clock.advance(10);
    }
    return pred() ? this.clock.now() - start : undefined;
  }

  udpPingsTo(a: DiscoAddress, since = 0): number {
    return this.sent.filter((s) => s.at >= since && Sim.key(s.probe) === `${a.host}:${a.port}`).length;
  }
}

describe('path selector', () => {
  it('starts relayed, pings the candidates and the relay at once, goes direct on the first pong', () => {
    const sim = new Sim();
    sim.link(A, true, 30);
    sim.sel.setCandidates([A]);
    sim.poll();
    expect(sim.sent.map((s) => Sim.key(s.probe))).toEqual(['relay', `${A.host}:${A.port}`]);
    expect(sim.sel.route).toBe('relayed');
    sim.clock.advance(30);
    expect(sim.sel.route).toBe('direct');
    const snap = sim.sel.snapshot();
    expect(snap.remote).toEqual(A);
    expect(snap.rttMs).toEqual({ direct: 30 });
    expect(snap.lastSwitchAt).toBe(sim.clock.wallNow());
    expect(snap.reason).toBeUndefined();
    sim.clock.advance(20);
    expect(sim.sel.snapshot().rttMs.relayed).toBe(40);
  });

  it('stays relayed while nothing answers, saying why', () => {
    const sim = new Sim();
    sim.poll();
    expect(sim.sel.snapshot().reason).toBe('no-candidates');
    sim.link(A, false);
    sim.sel.setCandidates([A]);
    sim.clock.advance(20_000);
    expect(sim.sel.route).toBe('relayed');
    expect(sim.sel.snapshot().reason).toBe('no-answer');
    sim.sel.setConditions({ stun: 'no-answer' });
    expect(sim.sel.snapshot().reason).toBe('udp-blocked');
    sim.sel.setConditions({ stun: 'varies' });
    expect(sim.sel.snapshot().reason).toBe('mapping-varies');
  });

  it('gives up on UDP after the first attempts when STUN says direct is hopeless, until something changes', () => {
    for (const stun of ['varies', 'no-answer'] as const) {
      const sim = new Sim();
      sim.link(A, false);
      sim.sel.setConditions({ stun });
      sim.sel.setCandidates([A]);
      sim.startTraffic();
      sim.poll();
      sim.clock.advance(10_000);
      const first = sim.udpPingsTo(A);
      expect(first).toBeGreaterThan(0);
      expect(sim.sel.probing).toBe(false);
      const quietFrom = sim.clock.now();
      sim.clock.advance(120_000);
      expect(sim.udpPingsTo(A, quietFrom)).toBe(0);
      expect(sim.sel.snapshot()).toMatchObject({
        route: 'relayed',
        reason: stun === 'varies' ? 'mapping-varies' : 'udp-blocked',
      });
      // The same candidates again (the peer's periodic call-me-maybe) change nothing.
      sim.sel.setCandidates([A]);
      sim.poll();
      sim.clock.advance(10_000);
      expect(sim.udpPingsTo(A, quietFrom)).toBe(0);
      // A network change tries again, and the path is found when it answers now.
      sim.link(A, true);
      sim.sel.retry();
      sim.poll();
      expect(sim.until(3_000, () => sim.sel.route === 'direct')).toBeDefined();
    }
  });

  it('keeps trying where direct may still work: STUN ok, unknown, or UDP answered once', () => {
    for (const stun of ['ok', 'unknown'] as const) {
      const sim = new Sim();
      sim.link(A, false);
      sim.sel.setConditions({ stun });
      sim.sel.setCandidates([A]);
      sim.startTraffic();
      sim.poll();
      sim.clock.advance(30_000);
      const from = sim.clock.now();
      sim.clock.advance(30_000);
      expect(sim.sel.probing).toBe(true);
      expect(sim.udpPingsTo(A, from)).toBeGreaterThan(5);
    }
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.startTraffic();
    sim.poll();
    sim.clock.advance(5_000);
    expect(sim.sel.route).toBe('direct');
    sim.link(A, false);
    sim.sel.setConditions({ stun: 'no-answer' });
    sim.clock.advance(60_000);
    const from = sim.clock.now();
    sim.clock.advance(20_000);
    expect(sim.udpPingsTo(A, from)).toBeGreaterThan(5);
  });

  it('after giving up, a new STUN verdict, new candidates or a ping from a new address try again', () => {
    const tries: Array<(sel: PathSelector) => void> = [
      (sel) => sel.setConditions({ stun: 'ok' }),
      (sel) => sel.setCandidates([A, B]),
      (sel) => sel.notePeerAddress({ host: '192.0.2.9', port: 4000 }),
    ];
    for (const again of tries) {
      const sim = new Sim();
      sim.link(A, false);
      sim.sel.setConditions({ stun: 'varies' });
      sim.sel.setCandidates([A]);
      sim.startTraffic();
      sim.poll();
      sim.clock.advance(15_000);
      expect(sim.sel.probing).toBe(false);
      const from = sim.clock.now();
      again(sim.sel);
      sim.poll();
      expect(sim.sel.probing).toBe(true);
      expect(sim.udpPingsTo(A, from)).toBe(1);
    }
  });

  it('falls back within 3 s when the direct path goes silent under traffic, then to relayed only', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.startTraffic();
    sim.poll();
    sim.clock.advance(20_000);
    expect(sim.sel.route).toBe('direct');
    for (const silentAt of [0, 370, 990]) {
      sim.clock.advance(silentAt);
      sim.link(A, false);
      const fellBack = sim.until(5_000, () => sim.sel.route !== 'direct');
      expect(fellBack).toBeLessThanOrEqual(3_000);
      expect(sim.sel.snapshot().reason).toBe('confirming');
      const relayedOnly = sim.until(10_000, () => sim.sel.route === 'relayed');
      expect(relayedOnly).toBeDefined();
      expect(sim.sel.snapshot().reason).toBe('direct-silent');
      sim.link(A, true);
      expect(sim.until(10_000, () => sim.sel.route === 'direct')).toBeDefined();
      sim.clock.advance(DEFAULT_PATH_TIMERS.stableMs);
    }
  });

  it('upgrades within 10 s once UDP comes back, after a long outage under traffic', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.startTraffic();
    sim.poll();
    sim.clock.advance(5_000);
    sim.link(A, false);
    sim.clock.advance(60_000);
    expect(sim.sel.route).toBe('relayed');
    sim.link(A, true);
    const upgraded = sim.until(15_000, () => sim.sel.route === 'direct');
    expect(upgraded).toBeLessThanOrEqual(10_000);
  });

  it('pings at keepalive pace when idle, stays direct, and notices a dead path once traffic starts', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.startTraffic();
    sim.poll();
    sim.clock.advance(5_000);
    sim.stopTraffic();
    sim.clock.advance(20_000); // active window and confirmation over
    const idleFrom = sim.clock.now();
    sim.clock.advance(100_000);
    const idlePings = sim.udpPingsTo(A, idleFrom);
    expect(idlePings).toBeGreaterThanOrEqual(3);
    expect(idlePings).toBeLessThanOrEqual(5); // 100 s / 25 s
    expect(sim.sel.route).toBe('direct');
    sim.link(A, false);
    sim.clock.advance(2_000);
    expect(sim.sel.route).toBe('direct'); // idle: nothing to notice with
    sim.startTraffic();
    const noticed = sim.until(5_000, () => sim.sel.route !== 'direct');
    expect(noticed).toBeLessThanOrEqual(3_000);
  });

  it('an idle peer that fell back retries at a back-off: a short outage is over within seconds', () => {
    for (const outageMs of [1_000, 3_000, 8_000, 20_000]) {
      const sim = new Sim();
      sim.link(A, true);
      sim.sel.setCandidates([A]);
      sim.poll();
      sim.clock.advance(40_000); // idle and direct
      expect(sim.sel.route).toBe('direct');
      sim.link(A, false);
      expect(sim.until(60_000, () => sim.sel.route === 'relayed')).toBeDefined();
      sim.clock.advance(outageMs);
      sim.link(A, true);
      const back = sim.until(30_000, () => sim.sel.route === 'direct');
      expect(back).toBeDefined();
      // The retries' gaps grow to half the time since the fallback: found within about half the outage again,
      // plus the streak of 2 a path that fell back needs.
      expect(back).toBeLessThanOrEqual(outageMs / 2 + 6_000);
    }
  });

  it('an idle peer whose direct path stays down pings at keepalive pace after the first retries', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(40_000);
    sim.link(A, false);
    expect(sim.until(60_000, () => sim.sel.route === 'relayed')).toBeDefined();
    const fellBackAt = sim.clock.now();
    sim.clock.advance(30_000);
    expect(sim.udpPingsTo(A, fellBackAt)).toBeLessThanOrEqual(8); // gaps of 2, 2, 2, 3, 4.5, 7, 10 s
    const later = sim.clock.now();
    sim.clock.advance(100_000);
    expect(sim.udpPingsTo(A, later)).toBeLessThanOrEqual(5); // 100 s at 25 s
  });

  it('STUN answering again while not direct (UDP passes again) pings the candidates at once', () => {
    const sim = new Sim();
    sim.link(A, false);
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(40_000);
    sim.sel.setConditions({ stun: 'no-answer' });
    sim.clock.advance(5_000);
    const from = sim.clock.now();
    sim.link(A, true);
    sim.sel.setConditions({ stun: 'ok' });
    sim.poll();
    expect(sim.udpPingsTo(A, from)).toBe(1);
    expect(sim.until(5_000, () => sim.sel.route === 'direct')).toBeDefined();
  });

  it('stays direct, recording no switch, each time an idle peer wakes and its path still answers', () => {
    const sim = new Sim();
    sim.link(A, true, 50);
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(40_000);
    expect(sim.sel.route).toBe('direct');
    const switched = sim.sel.snapshot().lastSwitchAt;
    const switches = sim.switches.length;
    for (let wake = 0; wake < 6; wake++) {
      sim.startTraffic();
      sim.clock.advance(1_000);
      sim.stopTraffic();
      sim.clock.advance(29_000); // a probe every 30 s, as the agent's liveness check sends
      expect(sim.sel.route).toBe('direct');
    }
    expect(sim.switches.length).toBe(switches);
    expect(sim.sel.snapshot().lastSwitchAt).toBe(switched);
    expect(sim.sel.snapshot().fallbacks).toBe(0);
  });

  it('does not flap on a lossy path: hysteresis bounds the switches', () => {
    const run = (timers: PathSelectorOptions['timers']) => {
      const sim = new Sim(timers ? { timers } : {});
      sim.link(A, true);
      // the path is up and down in turns of 3 s, each ping lost 30% of the time (deterministic)
      let n = 0;
      sim.deliver = (_p, at) => Math.floor(at / 3_000) % 2 === 0 && ++n % 10 >= 3;
      sim.sel.setCandidates([A]);
      sim.startTraffic();
      sim.poll();
      sim.clock.advance(120_000);
      const flaps = sim.switches.filter((s) => s.route === 'direct').length;
      sim.deliver = () => true; // the path steadies: still upgraded within the 10 s target
      expect(sim.until(12_000, () => sim.sel.route === 'direct')).toBeLessThanOrEqual(10_000);
      return flaps;
    };
    const withHysteresis = run(undefined);
    const without = run({ maxExtraStreak: 0, holdDownMaxMs: 1 });
    expect(without).toBeGreaterThanOrEqual(15);
    expect(withHysteresis).toBeLessThanOrEqual(without / 2);
  });

  it('honours relay-only and 443-only at once: relayed, no UDP pings, the reason shown', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.startTraffic();
    sim.poll();
    sim.clock.advance(3_000);
    expect(sim.sel.route).toBe('direct');
    sim.sel.setConditions({ policy: 'relay-only' });
    expect(sim.sel.route).toBe('relayed');
    expect(sim.sel.snapshot().reason).toBe('relay-only');
    const before = sim.sent.length;
    sim.clock.advance(30_000);
    const during = sim.sent.slice(before);
    expect(during.filter((s) => s.probe.target.via === 'udp')).toEqual([]);
    expect(during.filter((s) => s.probe.target.via === 'relay').length).toBeGreaterThan(0);
    sim.sel.setConditions({ policy: 'auto' });
    const after = sim.sent.length;
    sim.poll();
    expect(sim.sent.slice(after).filter((s) => s.probe.target.via === 'udp').length).toBe(1);
    expect(sim.until(1_000, () => sim.sel.route === 'direct')).toBeDefined();

    const strict = new Sim({ conditions: { egress: '443-only' } });
    strict.link(A, true);
    strict.sel.setCandidates([A]);
    strict.sel.notePeerAddress(B);
    strict.startTraffic();
    strict.poll();
    strict.clock.advance(60_000);
    expect(strict.sent.filter((s) => s.probe.target.via === 'udp')).toEqual([]);
    expect(strict.sel.snapshot().reason).toBe('443-only');
  });

  it('drops the direct remote at once when the peer says it stopped UDP, even while idle', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.link(B, true);
    sim.sel.setCandidates([A]);
    sim.sel.notePeerAddress(B);
    sim.poll();
    sim.clock.advance(40_000); // idle: the direct remote is trusted for the keepalive pace and more
    expect(sim.sel.route).toBe('direct');
    sim.link(A, false); // the peer went relay-only: it answers nothing over UDP any more
    sim.link(B, false);
    sim.sel.setCandidates([]);
    expect(sim.sel.route).toBe('relayed');
    expect(sim.sel.snapshot().candidates).toBe(0);
    const before = sim.sent.length;
    sim.clock.advance(60_000);
    expect(sim.sent.slice(before).filter((s) => s.probe.target.via === 'udp')).toEqual([]);
    sim.link(A, true); // auto again: its candidates come back and it goes direct
    sim.sel.setCandidates([A]);
    sim.poll();
    expect(sim.until(10_000, () => sim.sel.route === 'direct')).toBeLessThanOrEqual(3_000);
  });

  it('stops trusting an idle remote at once when the peer restarted, and moves to its new address', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(40_000); // idle and direct: A is trusted for the keepalive pace and more
    expect(sim.sel.route).toBe('direct');
    expect(sim.sel.distrustRemote()).toBe(true); // a handshake over the relay: the peer does not hear A
    expect(sim.sel.route).toBe('both'); // replies go over the relay too, from now on
    expect(sim.sel.distrustRemote()).toBe(false); // only a direct route changes
    sim.link(A, false); // the old process's port is gone; the new one's is B
    sim.link(B, true);
    sim.sel.setCandidates([B]);
    sim.poll();
    expect(sim.until(2_000, () => sim.sel.route === 'direct')).toBeLessThanOrEqual(100);
    expect(sim.sel.snapshot()).toMatchObject({ remote: B, fallbacks: 0 });
  });

  it('goes back to a distrusted remote at its next answer, and drops it after a ping timeout without one', () => {
    const sim = new Sim();
    sim.link(A, true, 30);
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(40_000);
    const before = sim.udpPingsTo(A);
    expect(sim.sel.distrustRemote()).toBe(true);
    sim.poll();
    expect(sim.udpPingsTo(A)).toBe(before + 1); // pinged at once, not at the idle pace
    expect(sim.until(1_000, () => sim.sel.route === 'direct')).toBe(30);
    expect(sim.sel.snapshot().remote).toEqual(A);
    sim.link(A, false);
    expect(sim.sel.distrustRemote()).toBe(true);
    sim.poll();
    const dropped = sim.until(10_000, () => sim.sel.route === 'relayed');
    expect(dropped).toBeGreaterThanOrEqual(DEFAULT_PATH_TIMERS.pingTimeoutMs);
    expect(dropped).toBeLessThanOrEqual(DEFAULT_PATH_TIMERS.pingTimeoutMs + 100);
  });

  it('accepts a pong only once, for a ping in flight, over the way the ping went', () => {
    const sim = new Sim();
    sim.link(A, false);
    sim.sel.setCandidates([A]);
    const probes = sim.sel.probesDue();
    const udp = probes.find((p) => p.target.via === 'udp')!;
    const relay = probes.find((p) => p.target.via === 'relay')!;
    expect(sim.sel.pong(Buffer.alloc(12, 0xee), udp.target)).toBe(false);
    expect(sim.sel.pong(udp.txid, { via: 'relay' })).toBe(false);
    expect(sim.sel.pong(relay.txid, { via: 'udp', to: B })).toBe(false);
    const again = sim.sel.probesDue();
    expect(again).toEqual([]);
    sim.clock.advance(2_000);
    const next = sim.sel.probesDue().find((p) => p.target.via === 'udp')!;
    expect(sim.sel.pong(next.txid, { via: 'udp', to: B })).toBe(false);
    sim.clock.advance(2_000);
    const third = sim.sel.probesDue().find((p) => p.target.via === 'udp')!;
    expect(sim.sel.pong(third.txid, { via: 'udp', to: { host: '::ffff:198.51.100.7', port: A.port } })).toBe(
      true,
    );
    expect(sim.sel.pong(third.txid, third.target)).toBe(false);
    expect(sim.sel.route).toBe('direct');
  });

  it('learns peer-reflexive candidates from pings, pings them, forgets them, never trusts them unanswered', () => {
    const sim = new Sim();
    sim.link(B, false);
    sim.sel.notePeerAddress(B);
    sim.poll();
    expect(sim.udpPingsTo(B)).toBe(1);
    expect(sim.sel.route).toBe('relayed');
    expect(sim.sel.snapshot().candidates).toBe(1);
    sim.clock.advance(DEFAULT_PATH_TIMERS.peerReflexiveTtlMs + 1);
    expect(sim.sel.snapshot().candidates).toBe(0);
  });

  it('moves to a clearly faster candidate, not to a slightly faster one', () => {
    const sim = new Sim();
    const C: DiscoAddress = { host: '2001:db8::9', port: 5000 };
    sim.link(A, true, 50);
    sim.link(B, false);
    sim.link(C, true, 60);
    sim.sel.setCandidates([A, B, C]);
    sim.startTraffic();
    sim.poll();
    sim.clock.advance(1_000);
    expect(sim.sel.remote).toEqual(A); // answered first
    sim.link(C, true, 45);
    sim.clock.advance(3 * DEFAULT_PATH_TIMERS.backgroundPingMs);
    expect(sim.sel.remote).toEqual(A); // 45 ms is not 20% better than 50
    sim.link(B, true, 5);
    sim.clock.advance(DEFAULT_PATH_TIMERS.backgroundPingMs + 1_000);
    expect(sim.sel.remote).toEqual(B);
  });

  it('caps candidates and pings in flight', () => {
    const sim = new Sim({ maxCandidates: 4, maxPending: 3 });
    const many = Array.from({ length: 40 }, (_, i) => ({ host: `10.1.0.${i + 1}`, port: 7000 }));
    sim.sel.setCandidates(many);
    for (let i = 0; i < 40; i++) sim.sel.notePeerAddress({ host: `10.2.0.${i + 1}`, port: 7000 });
    expect(sim.sel.snapshot().candidates).toBe(4);
    const probes = sim.sel.probesDue();
    expect(probes.length).toBe(5);
    // only the last three are still in flight
    expect(sim.sel.pong(probes[0]!.txid, probes[0]!.target)).toBe(false);
    expect(sim.sel.pong(probes[4]!.txid, probes[4]!.target)).toBe(true);
  });

  it('refuses timers that are not positive integers', () => {
    expect(() => pathTimers({ trustMs: 0 })).toThrow(/trustMs = 0/);
    expect(() => pathTimers({ idlePingMs: 1.5 })).toThrow(/idlePingMs/);
    expect(pathTimers({ maxExtraStreak: 0 }).maxExtraStreak).toBe(0);
  });

  it('keeps configured candidates whatever the call-me-maybe says', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.sel.setConfigured([A]);
    sim.sel.setCandidates([B]);
    sim.sel.setCandidates([]);
    expect(sim.sel.snapshot().candidates).toBe(1);
    sim.poll();
    sim.clock.advance(100);
    expect(sim.sel.remote).toEqual(A);
  });

  it('drops a remote at once when a new call-me-maybe no longer names it, and goes to the new one', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.link(B, true);
    sim.startTraffic();
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(100);
    expect(sim.sel.remote).toEqual(A);
    // The peer is another relay replica now (its relay connection moved): it names only its own endpoint.
    sim.sel.setCandidates([B]);
    expect(sim.sel.route).toBe('relayed');
    expect(sim.sel.remote).toBeUndefined();
    sim.poll();
    expect(sim.until(2_000, () => sim.sel.route === 'direct')).toBeDefined();
    expect(sim.sel.remote).toEqual(B);
    expect(sim.sel.snapshot().fallbacks).toBe(0);
    sim.stopTraffic();
  });

  it('forgetPaths: relayed at once, every learnt candidate forgotten, the configured ones tried again', () => {
    const sim = new Sim();
    sim.link(A, true);
    sim.link(B, true);
    sim.sel.setConfigured([B]);
    sim.sel.setCandidates([A]);
    sim.poll();
    sim.clock.advance(100);
    expect(sim.sel.route).toBe('direct');
    const before = sim.switches.length;
    sim.link(A, false);
    sim.link(B, false);
    sim.sel.forgetPaths();
    expect(sim.sel.route).toBe('relayed');
    expect(sim.switches.length).toBe(before + 1);
    expect(sim.sel.snapshot().candidates).toBe(1);
    const at = sim.clock.now();
    sim.poll();
    sim.clock.advance(5_000);
    // Only the configured address is pinged; nothing answers, nothing is trusted.
    expect(sim.udpPingsTo(A, at)).toBe(0);
    expect(sim.udpPingsTo(B, at)).toBeGreaterThan(0);
    expect(sim.sel.route).toBe('relayed');
    sim.link(B, true);
    sim.startTraffic();
    expect(sim.until(10_000, () => sim.sel.route === 'direct')).toBeDefined();
    expect(sim.sel.remote).toEqual(B);
    sim.stopTraffic();
  });
});
