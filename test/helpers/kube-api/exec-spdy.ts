/**
 * exec and attach over SPDY/3.1 (`X-Stream-Protocol-Version: v4.channel.k8s.io`), as the kubelet serves them:
 * the client opens one stream per channel, each named by its `streamtype` header (error, stdin, stdout, stderr);
 * once every channel the query asks for is open the "container" runs `cat` or `echo ARGS`, half-closes stdout and
 * stderr, and writes a Success status on the error stream.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { SpdySession, type SpdyStream } from './spdy/session.js';

export interface SpdyExec {
  command: string[];
  stdin: string;
  protocol: string;
}

const SUCCESS = JSON.stringify({ metadata: {}, status: 'Success' });

function expectedChannels(url: URL): Set<string> {
  const on = (name: string) => url.searchParams.get(name) === 'true' || url.searchParams.get(name) === '1';
  const channels = new Set(['error']);
  if (on('stdin')) channels.add('stdin');
  if (on('stdout')) channels.add('stdout');
  if (on('stderr') && !on('tty')) channels.add('stderr');
  return channels;
}

function runContainer(exec: SpdyExec, channels: Map<string, SpdyStream>): void {
  const finish = () => {
    channels.get('stdout')?.end();
    channels.get('stderr')?.end();
    channels.get('error')?.end(SUCCESS);
  };
  if (exec.command[0] === 'echo') {
    channels.get('stdout')?.write(`${exec.command.slice(1).join(' ')}\n`);
    return void finish();
  }
  const stdin = channels.get('stdin');
  if (!stdin) return void finish();
  stdin.onData = (data) => {
    exec.stdin += data.toString();
    channels.get('stdout')?.write(data);
  };
  stdin.onEnd = finish;
}

export function serveExecSpdy(req: IncomingMessage, socket: Duplex, exec: SpdyExec): void {
  const url = new URL(req.url ?? '/', 'https://x');
  const offered = req.headersDistinct['x-stream-protocol-version'] ?? [];
  const version = ['v4.channel.k8s.io', 'v3.channel.k8s.io'].find((v) => offered.includes(v));
  exec.protocol = `SPDY/3.1 ${version ?? 'none'}`;
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
      `X-Stream-Protocol-Version: ${version ?? ''}\r\n\r\n`,
  );
  const wanted = expectedChannels(url);
  const channels = new Map<string, SpdyStream>();
  new SpdySession(socket, (stream) => {
    const type = stream.headers.streamtype ?? '';
    if (!wanted.has(type) || channels.has(type)) return;
    channels.set(type, stream);
    if (channels.size === wanted.size) runContainer(exec, channels);
  });
}
