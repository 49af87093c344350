/**
 * The web console: the built single-page app under /ui/ (and / redirects there, /favicon.ico to its icon). Files come from memory
 * (relay/control/console/assets.ts), so a path outside the build cannot be named; every answer carries a strict
 * Content-Security-Policy (no inline script or style, same-origin fetches only) and no-sniff, no-frame headers.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { TunnelError } from '../../../../shared/errors.js';
import type { RelayContext } from '../../../context/context.js';
import { type ConsoleAsset, type ConsoleAssets, loadConsoleAssets } from '../../console/assets.js';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

function sendAsset(reply: FastifyReply, asset: ConsoleAsset, ifNoneMatch: string | undefined): Buffer | '' {
  reply.headers(SECURITY_HEADERS);
  reply.header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  reply.header('etag', asset.etag);
  if (ifNoneMatch?.split(/\s*,\s*/).includes(asset.etag)) {
    reply.code(304);
    return '';
  }
  reply.type(asset.contentType);
  return asset.body;
}

export const consoleRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext; assets?: ConsoleAssets }> = async (
  app,
  opts,
) => {
  const assets = opts.assets ?? loadConsoleAssets();
  if (assets.size === 0) opts.ctx.log.warn('the web console is not built (npm run build): /ui/ answers 404');

  app.get('/', async (_req, reply) => reply.redirect('/ui/', 302));
  app.get('/ui', async (_req, reply) => reply.redirect('/ui/', 301));
  // Browsers and bookmark tools ask the site root for its icon: the console's.
  app.get('/favicon.ico', async (_req, reply) => reply.redirect('/ui/favicon.svg', 301));
  app.get('/ui/*', async (req, reply) => {
    const rest = (req.params as { '*': string })['*'];
    const asset = assets.get(rest === '' ? 'index.html' : rest);
    if (!asset) {
      reply.headers(SECURITY_HEADERS);
      if (assets.size === 0)
        throw new TunnelError('NOT_FOUND', 'the web console is not built (npm run build)');
      throw new TunnelError('NOT_FOUND', `no console file ${JSON.stringify(rest.slice(0, 100))}`);
    }
    const inm = req.headers['if-none-match'];
    return sendAsset(reply, asset, typeof inm === 'string' ? inm : undefined);
  });
};
