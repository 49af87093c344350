/** What `join` and `run` say the data plane runs on: the WireGuard cipher and the UDP socket (none with 443-only). */
import { udpSocketName } from '../../shared/net/tunnel-endpoint/udp-gso.js';
import { defaultAead } from '../../shared/net/wireguard/crypto/aead.js';

/**
 * `openssl, UDP via GSO/GRO`, or with `--egress 443-only` (which sends no UDP at all) `openssl, no UDP (443-only)`.
 * Reads TUNNEL_UDP_GSO either way, so a bad setting fails the start (BAD_CONFIG).
 */
export function transportText(egress: string | undefined): string {
  const udp = udpSocketName();
  return `${defaultAead().name}, ${egress === '443-only' ? 'no UDP (--egress 443-only)' : `UDP via ${udp}`}`;
}
