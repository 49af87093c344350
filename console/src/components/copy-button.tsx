/** A button that copies `text` to the clipboard and says so. */
import { useState } from 'preact/hooks';

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<'' | 'Copied' | 'Copy failed: select the text'>('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone('Copied');
    } catch {
      setDone('Copy failed: select the text');
    }
    setTimeout(() => setDone(''), 2000);
  };
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy} aria-label={label}>
        Copy
      </button>
      <span class="copy-done" role="status">
        {done}
      </span>
    </span>
  );
}

/** A shell command shown in full with its copy button. */
export function CommandBox({ title, command, id }: { title: string; command: string; id: string }) {
  return (
    <div class="command">
      <div class="command-head">
        <span class="command-title" id={`${id}-title`}>
          {title}
        </span>
        <CopyButton text={command} label={`Copy ${title}`} />
      </div>
      <pre data-command={id}>
        <code>{command}</code>
      </pre>
    </div>
  );
}
