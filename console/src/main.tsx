/** Entry: installs the escaping of every rendered string (escape-rendered-text.ts), then mounts the console. */
import { render } from 'preact';
import { App } from './app.js';
import { escapeRenderedText } from './lib/escape-rendered-text.js';

escapeRenderedText();
const root = document.getElementById('app');
if (root) render(<App />, root);
