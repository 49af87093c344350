/**
 * exec and attach on the test API server. WebSocket (`v5.channel.k8s.io`, what kubectl tries first): every
 * message starts with its channel byte (0 stdin, 1 stdout, 2 stderr, 3 status, 255 close a channel); the
 * "container" runs `cat` (stdin echoed to stdout) or `echo ARGS`, then answers a Success status on channel 3.
 * SPDY/3.1 (what kubectl falls back to, or uses with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false): exec-spdy.ts.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { serveExecSpdy } from './exec-spdy.js';

export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const SUCCESS = JSON.stringify({ metadata: {}, status: 'Success' });

export interface ExecSession {
  path: string;
  command: string[];
  stdin: string;
  protocol: string;
}

function frame(channel: number, data: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);
}

function finish(ws: WebSocket): void {
  ws.send(frame(3, SUCCESS));
  ws.close(1000);
}

function run(ws: WebSocket, session: ExecSession): void {
  if (session.command[0] === 'echo') {
    ws.send(frame(1, `${session.command.slice(1).join(' ')}\n`));
    return void finish(ws);
  }
  ws.on('message', (data: Buffer) => {
    const channel = data[0];
    if (channel === 0) {
      session.stdin += data.subarray(1).toString();
      ws.send(frame(1, data.subarray(1)));
    } else if (channel === 255 && data[1] === 0) {
      finish(ws);
    }
  });
}

/** Serves one exec/attach Upgrade; `sessions` gets each one. */
export function serveExec(req: IncomingMessage, socket: Duplex, head: Buffer, sessions: ExecSession[]): void {
  const url = new URL(req.url ?? '/', 'https://x');
  const command = url.searchParams.getAll('command');
  const session: ExecSession = {
    path: url.pathname,
    command: command.length ? command : ['cat'],
    stdin: '',
    protocol: '',
  };
  sessions.push(session);
  if (/^spdy\//i.test(req.headers.upgrade ?? '')) return void serveExecSpdy(req, socket, session);
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => EXEC_PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  wss.handleUpgrade(req, socket, head, (ws) => {
    session.protocol = ws.protocol;
    run(ws, session);
  });
}
