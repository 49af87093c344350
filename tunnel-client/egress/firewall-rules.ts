/**
 * The egress destinations folded into the rules a firewall needs: one per protocol, host and port, naming every
 * purpose that uses it (the relay's TCP port carries registration, values, lease and the relay connection: one rule),
 * and whether the agent reaches it through the proxy (then the rule is for the proxy, not this destination).
 */
import type { Destination } from './destinations.js';

export interface FirewallRule {
  readonly protocol: 'tcp' | 'udp';
  readonly host: string;
  readonly port: number;
  readonly purposes: readonly string[];
  /** The proxy URL (password redacted) that carries it, or null when the agent connects directly. */
  readonly proxy: string | null;
}

export function firewallRules(destinations: readonly Destination[]): FirewallRule[] {
  const rules = new Map<string, { rule: FirewallRule; purposes: string[] }>();
  for (const d of destinations) {
    const key = `${d.protocol} ${d.host} ${d.port} ${d.proxy ?? ''}`;
    const found = rules.get(key);
    if (found) {
      if (!found.purposes.includes(d.purpose)) found.purposes.push(d.purpose);
      continue;
    }
    const purposes = [d.purpose as string];
    rules.set(key, {
      rule: { protocol: d.protocol, host: d.host, port: d.port, purposes, proxy: d.proxy ?? null },
      purposes,
    });
  }
  return [...rules.values()].map((r) => r.rule);
}
