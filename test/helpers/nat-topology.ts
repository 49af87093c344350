/**
 * NAT topologies for direct-path tests, out of network namespaces:
 *
 *   agent ns ── LAN ── agent router ns ══ WAN ══ host            (hub on the host; `createNatTopology`)
 *   (default route     (ip_forward, MASQUERADE out of WAN:
 *    via the router)    port-preserving, or --random-fully;
 *                       'drop-udp': UDP is not forwarded at all)
 *
 *   agent ns ── agent router ns ══ inet ns ══ hub router ns ── hub ns ── host (management only)
 *   (`createDoubleNatTopology`: the hub behind its own MASQUERADE, with the given ports forwarded in by DNAT,
 *    as a pod behind a NAT gateway with a port forward; with no UDP port forwarded the hub has no inbound UDP.
 *    inet has an address on each side, `inetAddress` and `inetAgentSideAddress`: two public addresses for STUN.)
 *
 * Every router drops UDP that arrives unsolicited for the router itself (a NAT gateway's firewall does): Linux
 * conntrack would otherwise keep such a packet's entry, and MASQUERADE would then give the next outbound packet
 * to that peer another port, which no endpoint-independent NAT does (and which hole punching cannot get past).
 *
 * Subnets are free /24s (freeTestSubnet); every namespace (and so every link) is destroyed by `destroy()` or
 * by the test cleanup. Nothing on the host changes but the veths to our own namespaces: its routes, sysctls
 * and iptables stay as they are, so traffic only reaches namespaces created here.
 */
import { addRule } from './iptables.js';
import { createNetns, freeTestSubnet, linkNetns, type Netns } from './netns.js';

/** How the agent's router translates: MASQUERADE keeping the source port when it can, with --random-fully, or
 * MASQUERADE with UDP dropped in FORWARD (a network that allows TCP only). */
export type AgentNat = 'masquerade' | 'random-fully' | 'drop-udp';

export interface NatTopology {
  /** The agent's namespace (private address `agentAddress`, default route via its router). */
  readonly agent: Netns;
  readonly agentAddress: string;
  readonly agentRouter: Netns;
  /** The agent router's outside address: where the agent's traffic comes from after MASQUERADE. */
  readonly agentPublicAddress: string;
  /** The address agents dial for the hub (the host side of the WAN, or the hub router's outside address). */
  readonly hubPublicAddress: string;
  destroy(): Promise<void>;
}

export interface DoubleNatTopology extends NatTopology {
  /** The hub's namespace: run the relay here, bound to 0.0.0.0 (its LAN and its management link). */
  readonly hub: Netns;
  /** The hub's address on its management link from the host (the API calls of a test). */
  readonly hubManagementAddress: string;
  readonly hubRouter: Netns;
  readonly inet: Netns;
  /** inet's address on the hub router's WAN: it has no route to the hub's LAN, so only translated traffic returns. */
  readonly inetAddress: string;
  /** inet's address on the agent router's WAN (a second public address). */
  readonly inetAgentSideAddress: string;
}

const sysctlForward = (ns: Netns) => ns.exec('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);

/** MASQUERADE out of `wanIf` (and the 'drop-udp' filter) in a router namespace already linked on both sides. */
async function masquerade(router: Netns, wanIf: string, nat: AgentNat): Promise<void> {
  await sysctlForward(router);
  const targetArgs = nat === 'random-fully' ? ['--random-fully'] : [];
  await addRule(router.name, 'POSTROUTING', ['-o', wanIf], 'MASQUERADE', { table: 'nat', targetArgs });
  await addRule(
    router.name,
    'INPUT',
    ['-i', wanIf, '-p', 'udp', '-m', 'conntrack', '--ctstate', 'NEW'],
    'DROP',
  );
  if (nat === 'drop-udp') await addRule(router.name, 'FORWARD', ['-p', 'udp'], 'DROP');
}

/** An agent behind its router, whose WAN side is `wan` (the router's namespace, already linked there). */
async function agentBehind(
  router: Netns,
  wanIf: string,
  nat: AgentNat,
): Promise<{ agent: Netns; agentAddress: string }> {
  const agent = await createNetns('nag');
  try {
    const lan = await linkNetns(router, agent, await freeTestSubnet(211));
    await agent.exec('ip', ['route', 'add', 'default', 'via', lan.aAddress]);
    await masquerade(router, wanIf, nat);
    return { agent, agentAddress: lan.bAddress };
  } catch (err) {
    await agent.destroy();
    throw err;
  }
}

/** The agent behind a NAT router whose WAN side is a veth to the host; the hub runs on the host. */
export async function createNatTopology(o: { nat: AgentNat }): Promise<NatTopology> {
  const agentRouter = await createNetns('nar', { subnet: 'auto' });
  try {
    const { agent, agentAddress } = await agentBehind(agentRouter, agentRouter.nsIf!, o.nat);
    return {
      agent,
      agentAddress,
      agentRouter,
      agentPublicAddress: agentRouter.nsAddress!,
      hubPublicAddress: agentRouter.hostAddress!,
      async destroy() {
        await agent.destroy();
        await agentRouter.destroy();
      },
    };
  } catch (err) {
    await agentRouter.destroy();
    throw err;
  }
}

/**
 * The agent behind its NAT router and the hub behind its own (MASQUERADE out; `forward` UDP and TCP ports DNAT'ed
 * in to the hub), the two routers joined by an `inet` namespace. The hub namespace also has a management link to
 * the host, for the test's own calls to the relay's API.
 */
export async function createDoubleNatTopology(o: {
  nat: AgentNat;
  forward: { udp: readonly number[]; tcp: readonly number[] };
}): Promise<DoubleNatTopology> {
  const made: Netns[] = [];
  const destroy = async () => {
    for (const ns of made.splice(0).reverse()) await ns.destroy();
  };
  try {
    const inet = await createNetns('nin');
    made.push(inet);
    await sysctlForward(inet);
    const hubRouter = await createNetns('nhr');
    made.push(hubRouter);
    const hubWan = await linkNetns(inet, hubRouter, await freeTestSubnet(211));
    await hubRouter.exec('ip', ['route', 'add', 'default', 'via', hubWan.aAddress]);
    const hub = await createNetns('nhb', { subnet: 'auto' });
    made.push(hub);
    const hubLan = await linkNetns(hubRouter, hub, await freeTestSubnet(211));
    await hub.exec('ip', ['route', 'add', 'default', 'via', hubLan.aAddress]);
    await masquerade(hubRouter, hubWan.bIf, 'masquerade');
    for (const [proto, ports] of [
      ['udp', o.forward.udp],
      ['tcp', o.forward.tcp],
    ] as const) {
      for (const port of ports) {
        const match = ['-i', hubWan.bIf, '-p', proto, '--dport', String(port)];
        await addRule(hubRouter.name, 'PREROUTING', match, 'DNAT', {
          table: 'nat',
          targetArgs: ['--to-destination', hubLan.bAddress],
        });
      }
    }
    const agentRouter = await createNetns('nar');
    made.push(agentRouter);
    const agentWan = await linkNetns(inet, agentRouter, await freeTestSubnet(211));
    await agentRouter.exec('ip', ['route', 'add', 'default', 'via', agentWan.aAddress]);
    const { agent, agentAddress } = await agentBehind(agentRouter, agentWan.bIf, o.nat);
    made.push(agent);
    return {
      agent,
      agentAddress,
      agentRouter,
      agentPublicAddress: agentWan.bAddress,
      hubPublicAddress: hubWan.bAddress,
      hub,
      hubManagementAddress: hub.nsAddress!,
      hubRouter,
      inet,
      inetAddress: hubWan.aAddress,
      inetAgentSideAddress: agentWan.aAddress,
      destroy,
    };
  } catch (err) {
    await destroy();
    throw err;
  }
}
