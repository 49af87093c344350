import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sessionTarget } from './session-audit.js';

describe('sessionTarget', () => {
  it('reads the kind, pod, container and command of exec, attach and port-forward paths', () => {
    expect(
      sessionTarget(
        '/api/v1/namespaces/default/pods/web-1/exec?command=sh&command=-c&command=ls%20-l&container=app&stdin=true',
      ),
    ).toEqual({
      kind: 'exec',
      namespace: 'default',
      pod: 'web-1',
      container: 'app',
      command: ['sh', '-c', 'ls -l'],
      ports: [],
    });
    expect(sessionTarget('/api/v1/namespaces/ns/pods/p/attach')).toMatchObject({
      kind: 'attach',
      container: null,
    });
    expect(sessionTarget('/api/v1/namespaces/ns/pods/p/portforward?ports=8080&ports=9090')).toMatchObject({
      kind: 'port-forward',
      ports: ['8080', '9090'],
    });
    for (const other of ['/api/v1/namespaces/ns/pods/p', '/api/v1/namespaces/ns/pods/p/log', '/version', '/'])
      expect(sessionTarget(other)).toBeNull();
  });

  it('never throws and keeps every field short, whatever the path', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 3000 }),
        fc.constantFrom('exec', 'attach', 'portforward'),
        (junk, kind) => {
          const t = sessionTarget(
            `/api/v1/namespaces/${encodeURIComponent(junk)}/pods/x/${kind}?command=${encodeURIComponent(junk)}`,
          );
          expect(t).not.toBeNull();
          for (const v of [t!.namespace, t!.pod, ...t!.command]) expect(v.length).toBeLessThanOrEqual(513);
        },
      ),
    );
  });
});
