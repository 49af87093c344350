/**
 * The HTTP agent the relay WebSocket (`ws`, shared/net/derp/client.ts) uses behind an HTTP CONNECT proxy:
 * https-proxy-agent, which sends CONNECT (with Proxy-Authorization from the URL's user:pass@) and then
 * runs TLS to the relay over the tunnel with the WebSocket's own TLS options (CA, pin check on the
 * upgrade response). The subclass only turns a refusal into PROXY_FAILED naming the proxy and the
 * destination: https-proxy-agent itself hands the proxy's answer to `ws` as if the relay had sent it
 * ("Unexpected server response: 407").
 */
import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { TunnelError } from '../../errors.js';
import { authority, proxyRefused, proxyUnreachable } from './connect-via.js';

type ConnectOpts = Parameters<HttpsProxyAgent<string>['connect']>[1];

export interface ProxyWsAgentOptions {
  /** PEM CA certificate(s) for an https:// proxy. */
  readonly ca?: string | null | undefined;
}

export class ProxyWsAgent extends HttpsProxyAgent<string> {
  readonly #proxy: URL;

  constructor(proxy: URL, opts: ProxyWsAgentOptions = {}) {
    super(proxy.href, { keepAlive: false });
    // The proxy's CA goes only into the options of the TLS session to the proxy (kept out of
    // http.Agent's options, so it can never stand in for the relay's CA on the inner session).
    if (opts.ca) this.connectOpts.ca = opts.ca;
    // Nagle off on the TCP socket to the proxy from the start (ws sets it on the TLS socket above it);
    // the benchmark showed no difference on loopback, it is here so small datagrams never wait.
    this.connectOpts.noDelay = true;
    this.#proxy = proxy;
  }

  override async connect(req: ClientRequest, opts: ConnectOpts): Promise<Socket> {
    const dest = authority(String(opts.host ?? ''), Number(opts.port));
    let status: number | undefined;
    const onConnect = (c: { statusCode: number }) => {
      status = c.statusCode;
    };
    req.once('proxyConnect', onConnect);
    let socket: Socket;
    try {
      socket = await super.connect(req, opts);
    } catch (err) {
      throw err instanceof TunnelError ? err : proxyUnreachable(this.#proxy, dest, err);
    } finally {
      req.removeListener('proxyConnect', onConnect);
    }
    if (status !== undefined && status !== 200) {
      socket.destroy();
      throw proxyRefused(this.#proxy, dest, status);
    }
    return socket;
  }
}
