/** Hash routes (#/clusters, #/clusters/NAME, #/approvals, #/keys, #/audit): nothing secret ever goes in them. */
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'clusters' }
  | { page: 'cluster'; name: string }
  | { page: 'approvals' }
  | { page: 'keys' }
  | { page: 'audit' };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  if (parts[0] === 'clusters' && parts[1]) return { page: 'cluster', name: decodeURIComponent(parts[1]) };
  if (parts[0] === 'approvals') return { page: 'approvals' };
  if (parts[0] === 'keys') return { page: 'keys' };
  if (parts[0] === 'audit') return { page: 'audit' };
  return { page: 'clusters' };
}

export const clusterHref = (name: string) => `#/clusters/${encodeURIComponent(name)}`;

export function useRoute(): Route {
  const [route, setRoute] = useState(parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
