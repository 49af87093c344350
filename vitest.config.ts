import { defineConfig } from 'vitest/config';

// Unit tests sit beside the code (*.test.ts); integration tests (real processes, sockets and
// network namespaces) live in test/. Integration suites touch shared host resources
// (namespaces, wireguard-go's UAPI socket directory), so files run one at a time there.
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
          name: 'integration',
          include: ['test/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
