/**
 * An incremental parser of a text/event-stream (the HTML "server-sent events" format): feed it the decoded
 * text in chunks of any size, get back the events each chunk completed. Lines end in LF, CRLF or CR; a line
 * starting with ':' is a comment (keepalive); `event`, `data` (several join with LF) and `id` fields are kept,
 * others ignored; a blank line dispatches the event (none when it has no data field, as the spec says). A line
 * longer than `maxLineChars` is refused (BAD_INPUT) rather than buffered without end.
 */
import { TunnelError } from '../../errors.js';

export interface SseEvent {
  /** `message` when the event names none. */
  event: string;
  data: string;
  /** The last id seen on the stream so far (the spec's "last event ID"), '' when none. */
  id: string;
}

export const DEFAULT_MAX_LINE_CHARS = 4 * 1024 * 1024;

export class SseParser {
  readonly #maxLineChars: number;
  #pending = '';
  /** The previous chunk ended in CR: a LF starting this one belongs to that line end. */
  #afterCr = false;
  #event = '';
  #data: string[] = [];
  #hasData = false;
  #lastId = '';

  constructor(opts: { maxLineChars?: number } = {}) {
    this.#maxLineChars = opts.maxLineChars ?? DEFAULT_MAX_LINE_CHARS;
  }

  /** The events completed by `text`. */
  push(text: string): SseEvent[] {
    let input = text;
    if (this.#afterCr && input.startsWith('\n')) input = input.slice(1);
    this.#afterCr = false;
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < input.length; i++) {
      const ch = input.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      this.#line(this.#pending + input.slice(start, i), out);
      this.#pending = '';
      if (ch === 13) {
        if (i + 1 === input.length) this.#afterCr = true;
        else if (input.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#pending += input.slice(start);
    if (this.#pending.length > this.#maxLineChars) {
      throw new TunnelError('BAD_INPUT', `event stream: a line is over ${this.#maxLineChars} characters`);
    }
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.#hasData)
        out.push({ event: this.#event || 'message', data: this.#data.join('\n'), id: this.#lastId });
      this.#event = '';
      this.#data = [];
      this.#hasData = false;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') {
      this.#data.push(value);
      this.#hasData = true;
    } else if (field === 'id' && !value.includes('\0')) this.#lastId = value;
  }
}
