/**
 * What the hub UDP tests share: the real `tunnel-relay serve` with `--udp-port` on a given host, a cluster
 * registered through its API with a key pair the test generates (as a stock WireGuard peer would be
 * configured: the register reply carries the tunnel address, the hub key, the per-pair preshared key and
 * the UDP endpoint), and the relay's /metrics as numbers.
 */
import { generateKeyPair, type KeyPair } from '../shared/keys.js';
import { api, createCluster, type ServedRelay } from './abuse/relay-fixture.js';
import { cleanEnv, freeUdpPort, startServe, tempDir } from './cli-harness.js';

export interface UdpRelay extends ServedRelay {
  udpPort: number;
}

/** `tunnel-relay serve` listening (TLS and UDP) on `host`. */
export async function serveWithUdp(host: string, extra: readonly string[] = []): Promise<UdpRelay> {
  const udpPort = await freeUdpPort(host);
  const dataDir = tempDir('hub-udp-');
  const { proc, ready } = await startServe(dataDir, `${host}:0`, ['--udp-port', String(udpPort), ...extra]);
  const adminKey = ready.adminKey ?? '';
  const adminEnv = cleanEnv({
    TUNNEL_RELAY_URL: ready.url,
    TUNNEL_ACCESS_KEY: adminKey,
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  });
  return { proc, ready, dataDir, adminEnv, adminKey, udpPort };
}

export interface Tunnel {
  hubPublicKey: string;
  presharedKey: string;
  /** `100.64.x.y/32` */
  address: string;
  udpEndpoint: string | null;
}

/** Creates cluster `name` and registers a fresh key pair to it (Accepted); returns the keys and the tunnel. */
export async function registerPeer(
  relay: ServedRelay,
  name: string,
): Promise<{ keys: KeyPair; tunnel: Tunnel }> {
  const psk = await createCluster(relay, name);
  const keys = generateKeyPair();
  const r = await api(relay.ready.url, 'POST', '/api/v1/register', {
    token: psk,
    body: { cluster: name, publicKey: keys.publicKey.toString('base64'), agentVersion: 'wireguard-go' },
  });
  if (r.status !== 201 || !r.body.tunnel) throw new Error(`register ${name}: ${r.status} ${r.text}`);
  return { keys, tunnel: r.body.tunnel };
}

/** The relay's /metrics: samples keyed by `name{labels}` exactly as exposed. */
export async function metrics(relay: ServedRelay): Promise<Map<string, number>> {
  const r = await api(relay.ready.url, 'GET', '/metrics', { token: relay.adminKey });
  if (r.status !== 200) throw new Error(`/metrics: ${r.status}`);
  const out = new Map<string, number>();
  for (const line of String(r.text).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** One UDP counter's value (0 when not exported yet). */
export const udpCounter = (m: Map<string, number>, name: string, reason?: string): number =>
  m.get(`tunnel_relay_udp_${name}${reason ? `{reason="${reason}"}` : ''}`) ?? 0;
