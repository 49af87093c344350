/**
 * The console shows untrusted strings (display names, cluster and group names, agent claims and versions, path
 * reasons, condition messages, audit entries, values, relay error messages) under the one rule the CLIs use
 * (shared/kit/untrusted-text.ts): control, bidi and other invisible characters appear as `\u202e`-style escapes, so a
 * display name "staging \u202Edorp-ton\u202C" cannot read as "staging not-prod". Rather than each page remembering
 * it, Preact's vnode hook applies it to every text node the console renders (line feeds kept, for the YAML and
 * command blocks) and to the attributes a user reads (title, aria-label, placeholder, alt). Form field values stay
 * as stored, so that saving what was loaded never changes it.
 */
import { options } from 'preact';
import { escapeLines } from '../../../shared/kit/untrusted-text.js';

const SHOWN_ATTRIBUTES = ['title', 'aria-label', 'placeholder', 'alt'] as const;

/** A vnode as the hook sees it: a text node has type null and its text as props. */
interface RenderedNode {
  type: unknown;
  props: unknown;
}

function escapeNode(node: RenderedNode): void {
  if (node.type === null && typeof node.props === 'string') {
    node.props = escapeLines(node.props);
    return;
  }
  if (typeof node.type !== 'string' || typeof node.props !== 'object' || node.props === null) return;
  const props: Record<string, unknown> = { ...node.props };
  let changed = false;
  for (const name of SHOWN_ATTRIBUTES) {
    const value = props[name];
    if (typeof value !== 'string') continue;
    const shown = escapeLines(value);
    if (shown !== value) {
      props[name] = shown;
      changed = true;
    }
  }
  if (changed) node.props = props;
}

/** Installs the rule for every vnode created from now on (call once, before the first render). */
export function escapeRenderedText(): void {
  const previous = options.vnode;
  options.vnode = (vnode) => {
    escapeNode(vnode);
    previous?.(vnode);
  };
}
