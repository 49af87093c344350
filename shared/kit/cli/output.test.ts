import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { jsonLogStream, streamPrinter, table } from './output.js';

class Collect extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

const EVIL = 'a\x1b[2J\x1b]52;c;eA==\x07\u202eb\x9b\nfake: line';
const RAW = {
  /** A raw control (other than line feed) or bidi character in `text`. */
  test(text: string): boolean {
    return [...text].some((c) => {
      const cp = c.codePointAt(0) ?? 0;
      return (cp < 0x20 && cp !== 0x0a) || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e);
    });
  },
};

describe('printers', () => {
  it('escape every kind of output, keep JSON exact and keep composed lines', () => {
    const out = new Collect();
    const err = new Collect();
    const p = streamPrinter(out, err);
    p.json({ v: EVIL });
    p.jsonLine({ v: EVIL });
    p.line(`first\nsecond ${EVIL}`);
    p.lines([`value: ${EVIL}`, 'next']);
    p.note(EVIL);
    expect(RAW.test(out.text + err.text)).toBe(false);
    const [doc, line] = out.text.split('\n}\n');
    expect(JSON.parse(`${doc}\n}`)).toEqual({ v: EVIL });
    expect(JSON.parse(line!.split('\n')[0]!)).toEqual({ v: EVIL });
    // line(): the command's own line feed stays, the value's too (only lines() and table() make a value one line)
    expect(out.text).toContain('first\nsecond a\\u001b[2J');
    // lines(): one printed line per entry, whatever the entry holds
    expect(out.text).toContain(
      'value: a\\u001b[2J\\u001b]52;c;eA==\\u0007\\u202eb\\u009b\\u000afake: line\nnext\n',
    );
  });

  it('table() escapes each cell to one line before aligning the columns', () => {
    const t = table(
      ['NAME', 'NOTE'],
      [
        [EVIL, 'x'],
        ['b', EVIL],
      ],
    );
    const rows = t.split('\n');
    expect(rows).toHaveLength(3);
    expect(RAW.test(t)).toBe(false);
    expect(rows[1]!.indexOf('x')).toBe(rows[0]!.indexOf('NOTE'));
  });

  it('jsonLogStream escapes what JSON leaves raw in log lines, which stay valid JSON', () => {
    const dest = new Collect();
    const log = jsonLogStream(dest);
    const line = `${JSON.stringify({ msg: EVIL, ua: '\x85\u2028' })}\n`;
    log.write(line);
    expect(RAW.test(dest.text)).toBe(false);
    expect(dest.text.endsWith('\n')).toBe(true);
    expect(JSON.parse(dest.text)).toEqual({ msg: EVIL, ua: '\x85\u2028' });
  });
});
