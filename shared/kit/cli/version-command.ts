/**
 * `PROGRAM version [--output json]` and `PROGRAM --version` / `-V`: the package version, the Node.js
 * version and the WireGuard cipher implementation this process would use (TUNNEL_WG_AEAD, else the
 * fastest that loads). The cipher is looked up only when asked, so other commands do not load it.
 */
import { Command, CommanderError } from 'commander';
import { isTunnelError } from '../../errors.js';
import { defaultAead } from '../../net/wireguard/crypto/aead.js';
import { outputOption, streamPrinter } from './output.js';
import { packageVersion } from './version.js';

export interface VersionInfo {
  program: string;
  version: string;
  node: string;
  /** The ChaCha20-Poly1305 implementation (openssl, sodium-native, node:crypto); null when none loads. */
  wireguardCipher: string | null;
  /** Why not, when wireguardCipher is null (TUNNEL_WG_AEAD names an unknown or unloadable one). */
  wireguardCipherError?: string;
}

export function versionInfo(program: string): VersionInfo {
  const base = { program, version: packageVersion(), node: process.version };
  try {
    return { ...base, wireguardCipher: defaultAead().name };
  } catch (err) {
    return {
      ...base,
      wireguardCipher: null,
      wireguardCipherError: isTunnelError(err) ? err.message : String(err),
    };
  }
}

export function versionLines(v: VersionInfo): string[] {
  return [
    `${v.program} ${v.version}`,
    `node ${v.node}`,
    v.wireguardCipher === null
      ? `wireguard cipher: none loads (${v.wireguardCipherError ?? 'unknown'})`
      : `wireguard cipher: ChaCha20-Poly1305 via ${v.wireguardCipher}`,
  ];
}

/** Adds the `version` command and `-V, --version` to `program`. */
export function withVersion(program: Command): Command {
  const name = program.name();
  program
    .option('-V, --version', 'print the version, the Node.js version and the WireGuard cipher')
    .on('option:version', () => {
      const text = versionLines(versionInfo(name));
      streamPrinter().lines(text);
      throw new CommanderError(0, 'commander.version', text.join('\n'));
    });
  return program.addCommand(
    new Command('version')
      .description('print the version, the Node.js version and the WireGuard cipher in use')
      .addOption(outputOption())
      .action((flags: { output: string }) => {
        const info = versionInfo(name);
        const out = streamPrinter();
        if (flags.output === 'json') out.json(info);
        else out.lines(versionLines(info));
      }),
  );
}
