import { defineConfig } from 'vitest/config';

// Unit tests sit beside the code (*.test.ts); integration tests (real processes, sockets and
// network namespaces) live in test/. Integration files run one at a time within a lane: they start
// relays, agents and routers whose timing other heavy work would disturb. A second lane runs beside
// the first (`npm test` starts one vitest process per lane: test/run-lanes.mjs): the files that spend nearly all their time waiting on keepalive-pace timers (an idle
// agent's 25 s probes, a fallback noticed at that pace, a log watched for 35 s, a relay outage of 9 s
// while the agent backs off) and use next to no
// CPU meanwhile, and the documented commands run one by one against a live relay (no timing asserted). Every name a test creates on the host is unique per process (test/helpers/names.ts),
// and test/global-setup.ts compiles dist/ under a lock before a lane starts.
const WAITING_LANE = [
  'test/idle-cost.test.ts',
  'test/direct-path-nat.test.ts',
  'test/direct-path-hub-nat.test.ts',
  'test/agent-logs.test.ts',
  'test/direct-path-cli-reason.test.ts',
  'test/docs-commands-live.test.ts',
  'test/agent-outage-log.test.ts',
  // Measured alone (integration project, one file at a time, 2 cores): each used under 0.6 of one core on average.
  'test/wireguard-interop.test.ts',
  'test/relay-tls-handshake.test.ts',
  'test/events-replicas.test.ts',
  'test/replicas-udp-owner.test.ts',
  'test/session-inprocess.test.ts',
  'test/admin-key-cli.test.ts',
  'test/abuse/call-me-maybe-flood.test.ts',
  'test/abuse/bad-keys.test.ts',
];

const integration = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  fileParallelism: false,
  globalSetup: ['test/global-setup.ts'],
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'shared/**/*.test.ts',
            'relay/**/*.test.ts',
            'tunnel-client/**/*.test.ts',
            'console/**/*.test.ts',
          ],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          ...integration,
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...WAITING_LANE, '**/node_modules/**'],
        },
      },
      {
        test: { ...integration, name: 'integration-waiting', include: WAITING_LANE },
      },
    ],
  },
});
