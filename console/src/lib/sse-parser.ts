/**
 * A server-sent events parser (the text/event-stream format of the HTML standard) for a stream read with
 * fetch(): EventSource cannot send an Authorization header. Feed it decoded text in chunks of any size; it
 * returns the events completed so far. Lines end in LF, CRLF or CR; a blank line dispatches; lines starting
 * with ':' are comments; `data` lines join with LF; one leading space after the colon is dropped.
 */
export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

/** A single line or event longer than this is dropped (the feed's events are a few KiB). */
export const MAX_SSE_EVENT_CHARS = 1024 * 1024;

export class SseParser {
  private buffer = '';
  private pendingCr = false;
  private event = '';
  private data: string[] = [];
  private dataChars = 0;
  private pendingId: string | null = null;
  private lastId: string | null = null;

  /** The last `id:` seen (kept across events, as the standard says). */
  get lastEventId(): string | null {
    return this.lastId;
  }

  push(chunk: string): SseEvent[] {
    const out: SseEvent[] = [];
    let text = chunk;
    if (this.pendingCr) {
      this.pendingCr = false;
      if (text.startsWith('\n')) text = text.slice(1);
    }
    this.buffer += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) this.pendingCr = true;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    if (this.buffer.length > MAX_SSE_EVENT_CHARS) this.buffer = '';
    return out;
  }

  private line(line: string): SseEvent | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.addData(value);
    else if (field === 'id' && !value.includes('\0')) this.pendingId = value;
    return null;
  }

  private addData(value: string): void {
    this.dataChars += value.length + 1;
    if (this.dataChars > MAX_SSE_EVENT_CHARS) {
      this.data = [];
      return;
    }
    this.data.push(value);
  }

  private dispatch(): SseEvent | null {
    if (this.pendingId !== null) this.lastId = this.pendingId;
    const ev: SseEvent = { event: this.event || 'message', data: this.data.join('\n'), id: this.lastId };
    const hadData = this.data.length > 0 && this.dataChars <= MAX_SSE_EVENT_CHARS;
    this.event = '';
    this.data = [];
    this.dataChars = 0;
    this.pendingId = null;
    return hadData ? ev : null;
  }
}
