/**
 * Whether a command line asked for JSON output (`--output json`, `--output=json`, `-o json`, `-ojson`; the last one
 * given wins, as in commander), read from the raw arguments so that a command that failed before or while parsing
 * can still answer in JSON.
 */
export function argvWantsJson(args: readonly string[]): boolean {
  let format: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--') break;
    if (a === '--output' || a === '-o') {
      format = args[i + 1];
      i++;
    } else if (a.startsWith('--output=')) format = a.slice('--output='.length);
    else if (a.startsWith('-o') && !a.startsWith('--')) format = a.slice(2);
  }
  return format === 'json';
}
