/**
 * Answers for requests Node's HTTP parser refuses before any route sees them (the https server's
 * 'clientError'), in the API's error envelope instead of Fastify's own body:
 *   body framing it cannot read one way (Content-Length with Transfer-Encoding, two Content-Length
 *   values, a Transfer-Encoding other than chunked, a bad chunk size)   400 BAD_FRAMING
 *   request line and headers over Node's size limit                      431 HEADERS_TOO_LARGE
 *   a request head not received in time                                  408 REQUEST_TIMEOUT
 *   anything else the parser refuses                                     400 BAD_INPUT
 * The message is the parser's own reason (a fixed text, never a header value). The connection guard
 * (relay/ops/http/connection-guard.ts) writes the answer and closes the connection: after a parse error nothing
 * more on it can be trusted.
 */
import { maxHeaderSize } from 'node:http';
import { type ErrorCode, TunnelError } from '../../shared/errors.js';

/** llhttp error codes about how the body is delimited. */
const FRAMING_CODES = new Set([
  'HPE_INVALID_TRANSFER_ENCODING',
  'HPE_UNEXPECTED_CONTENT_LENGTH',
  'HPE_INVALID_CONTENT_LENGTH',
  'HPE_INVALID_CHUNK_SIZE',
]);

interface ParseFailure {
  status: number;
  error: TunnelError;
}

/** The answer for a parser error with this `code` and `reason` (Node sets both on 'clientError'). */
export function clientErrorAnswer(code: string | undefined, reason: string | undefined): ParseFailure {
  const why = reason ? `: ${reason.slice(0, 120)}` : '';
  const answer = (errCode: ErrorCode, message: string): ParseFailure => {
    const error = new TunnelError(errCode, message);
    return { status: error.status, error };
  };
  if (code !== undefined && FRAMING_CODES.has(code)) {
    return answer('BAD_FRAMING', `request body framing refused${why}`);
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return answer('HEADERS_TOO_LARGE', `request line and headers are over ${maxHeaderSize} bytes`);
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return answer('REQUEST_TIMEOUT', 'request line and headers not received in time');
  }
  return answer('BAD_INPUT', `malformed HTTP request${why}`);
}
