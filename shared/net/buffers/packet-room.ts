/**
 * Room around a packet on the send path, so that each layer writes its header (and trailer) in place
 * instead of allocating a new buffer and copying the packet into it.
 *
 *   one allocation:  | headroom (free) | packet view | tailroom (free) |
 *   a layer grows the view by its header before and its trailer after, and hands the grown view down.
 *
 * The contract is explicit and bound to one view object: the layer that owns the memory grants room with
 * the view it hands down (allocPacket, grantRoom); the layer below asks for room with growPacket(), which
 * moves the remaining grant to the grown view and revokes it on the old one (room is used once). Any other
 * Buffer (a plain one, a pooled one, another view of the same memory, a view the grant moved away from)
 * has no room: growPacket() returns null and the caller takes its copying path.
 *
 * A granted view is handed over with its bytes: the layer below may overwrite them (WireGuard encrypts in
 * place). Grant only a view nobody reads afterwards. A grant is a property of the view object under a
 * module-private symbol (0: none), so it costs a property access (no WeakMap for the garbage collector to
 * clear) and dies with the view.
 */
import { TunnelError } from '../../errors.js';

/**
 * What the layers below a sender allow it: the largest packet they carry, and the room to grant around
 * a packet so that each of them writes its header and trailer in place. A layer adds its own header to
 * what the layer below declares (each layer declares only its own sizes).
 */
export interface PacketRoom {
  readonly mtu: number;
  readonly headroom: number;
  readonly tailroom: number;
}

/** Largest headroom or tailroom one grant records. */
export const MAX_ROOM = 0xff_ffff;
const SHIFT = 0x100_0000; // headroom * SHIFT + tailroom: both < 2^24, the sum stays an exact integer

const GRANT = Symbol('packet-room grant');
/** A view as this module sees it: its grant under the private symbol (absent or 0: none). */
interface GrantedView extends Uint8Array {
  [GRANT]?: number;
}
const grantOf = (view: GrantedView): number => view[GRANT] ?? 0;
const setGrant = (view: GrantedView, grant: number): void => {
  view[GRANT] = grant;
};

/**
 * A new `length`-byte view of its own memory with `headroom` bytes free before it and `tailroom` after it,
 * granted. The bytes are not initialised.
 */
export function allocPacket(length: number, headroom: number, tailroom: number): Buffer {
  checkRoom(headroom, tailroom);
  const raw = Buffer.allocUnsafeSlow(headroom + length + tailroom); // never the shared pool
  const view = raw.subarray(headroom, headroom + length);
  if (headroom + tailroom > 0) setGrant(view, headroom * SHIFT + tailroom);
  return view;
}

/**
 * Grants the `headroom` bytes before `view` and the `tailroom` bytes after it (within its ArrayBuffer) to
 * whoever receives `view`. Only the owner of that memory may call this. Returns `view`.
 */
export function grantRoom(view: Buffer, headroom: number, tailroom: number): Buffer {
  checkRoom(headroom, tailroom);
  if (headroom > view.byteOffset || tailroom > view.buffer.byteLength - view.byteOffset - view.length) {
    throw new TunnelError('BAD_INPUT', 'packet room reaches outside the buffer');
  }
  if (headroom + tailroom > 0 || grantOf(view) !== 0) setGrant(view, headroom * SHIFT + tailroom);
  return view;
}

/** Bytes granted before `view` (0 without a grant). */
export function headroomOf(view: Uint8Array): number {
  return Math.floor(grantOf(view) / SHIFT);
}

/** Bytes granted after `view` (0 without a grant). */
export function tailroomOf(view: Uint8Array): number {
  return grantOf(view) % SHIFT;
}

/**
 * The view grown by `before` bytes in front and `after` bytes behind, with the rest of the room granted to
 * it and none left on `view`; null (nothing changes) when `view` was not granted that much room.
 * The new bytes are not initialised: the caller writes them.
 */
export function growPacket(view: Uint8Array, before: number, after: number): Buffer | null {
  const g = grantOf(view);
  if (g === 0) return null;
  const head = Math.floor(g / SHIFT);
  const tail = g % SHIFT;
  if (before > head || after > tail || before < 0 || after < 0) return null;
  setGrant(view, 0);
  const grown = Buffer.from(view.buffer, view.byteOffset - before, before + view.length + after);
  const rest = (head - before) * SHIFT + (tail - after);
  if (rest > 0) setGrant(grown, rest);
  return grown;
}

function checkRoom(headroom: number, tailroom: number): void {
  if (
    !Number.isInteger(headroom) ||
    !Number.isInteger(tailroom) ||
    headroom < 0 ||
    tailroom < 0 ||
    headroom > MAX_ROOM ||
    tailroom > MAX_ROOM
  ) {
    throw new TunnelError('BAD_INPUT', `packet room ${headroom}/${tailroom} is out of range 0..${MAX_ROOM}`);
  }
}
