/** `--allow <host:port>` of `tunnel-client join` and `tunnel-relay manifests agent`: the upstreams the hub may reach. */
import { Option } from 'commander';
import { collect, parseHostPort } from './parsers.js';

/** Repeatable; each value is kept as host:port, an IPv6 host in brackets. */
export function allowOption(): Option {
  return new Option('--allow <host:port>', 'another upstream the hub may reach (repeatable)').argParser(
    (value: string, previous: string[] | undefined) => {
      const hp = parseHostPort(value, '--allow');
      return collect(hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`, previous);
    },
  );
}
