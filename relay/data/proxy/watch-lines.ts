/**
 * A JSON watch body (`GET ...?watch=true`, one event object per line) cut into whole events, keeping the
 * resourceVersion of the last one, so a watch whose agent went away can be reopened where it stopped and the
 * client never sees half an event. An event longer than MAX_WATCH_EVENT_BYTES, or one that does not parse,
 * turns the tracker off: from then on the bytes pass as they come and the watch is not resumable.
 */
export const MAX_WATCH_EVENT_BYTES = 16 * 1024 * 1024;
const NEWLINE = 0x0a;

interface WatchObject {
  metadata?: { resourceVersion?: unknown };
  /** A Table (kubectl get -w): the row's object carries the version. */
  rows?: Array<{ object?: { metadata?: { resourceVersion?: unknown } } }>;
}

/** The resourceVersion an event line carries; null when it has none (an ERROR event). */
export function eventResourceVersion(line: Buffer): string | null | undefined {
  let event: { type?: unknown; object?: WatchObject };
  try {
    event = JSON.parse(line.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof event !== 'object' || event === null || event.type === 'ERROR') return null;
  const v =
    event.object?.metadata?.resourceVersion ?? event.object?.rows?.[0]?.object?.metadata?.resourceVersion;
  return typeof v === 'string' && v.length > 0 && v.length <= 64 ? v : null;
}

export class WatchLines {
  #held: Buffer[] = [];
  #heldBytes = 0;
  #resourceVersion: string | null;
  #tracking = true;

  constructor(resourceVersion: string | null) {
    this.#resourceVersion = resourceVersion;
  }

  /** The version to reopen from: the last event's, else the request's own. */
  get resourceVersion(): string | null {
    return this.#resourceVersion;
  }

  /** False once the body stopped being whole JSON events of a bounded size. */
  get resumable(): boolean {
    return this.#tracking;
  }

  /** Bytes ready for the client: whole events only (a partial one waits for its end). */
  push(chunk: Buffer): Buffer[] {
    if (!this.#tracking) return [chunk];
    const out: Buffer[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, nl + 1);
      const line = this.#heldBytes ? Buffer.concat([...this.#held.splice(0), piece]) : piece;
      this.#heldBytes = 0;
      start = nl + 1;
      if (!this.#track(line)) return [...out, line, chunk.subarray(start)];
      out.push(line);
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return out;
    if (this.#heldBytes + rest.length > MAX_WATCH_EVENT_BYTES) {
      this.#tracking = false;
      const held = this.#held.splice(0);
      this.#heldBytes = 0;
      return [...out, ...held, rest];
    }
    this.#held.push(Buffer.from(rest));
    this.#heldBytes += rest.length;
    return out;
  }

  /** Drops a partial event (its upstream was cut). */
  discardPartial(): void {
    this.#held = [];
    this.#heldBytes = 0;
  }

  #track(line: Buffer): boolean {
    if (line.length <= 1) return true;
    const version = eventResourceVersion(line);
    if (version === undefined) {
      this.#tracking = false;
      return false;
    }
    if (version !== null) this.#resourceVersion = version;
    return true;
  }
}
