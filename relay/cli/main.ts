#!/usr/bin/env -S node --initial-old-space-size=64 --heap-growing-percent=200
/**
 * tunnel-relay binary: the command tree with the data plane (DERP at /derp, hub node) and the hub's
 * proxies (CONNECT, /api/v1/clusters/:name/proxy) mounted.
 */
import { main } from '../../shared/kit/cli/run-cli.js';
import { buildRelayProgram } from './program.js';

main(
  buildRelayProgram({
    loadStartOptions: async () => {
      const { hubProxyPlugin } = await import('../data/proxy/proxy-plugin.js');
      return { plugins: [hubProxyPlugin()] };
    },
  }),
);
