/**
 * Commander's usage errors, tied to the command they came from so the hint can name that command's own help
 * (`see tunnel-relay cluster create --help`), and with commander's suggestion kept on the same line.
 */
import { type Command, CommanderError } from 'commander';

export class UsageError extends CommanderError {
  /** The full command path, e.g. "tunnel-relay cluster create". */
  readonly commandPath: string;

  constructor(err: CommanderError, commandPath: string) {
    super(err.exitCode, err.code, err.message);
    this.commandPath = commandPath;
  }
}

export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * One line for a commander message: "error: unknown option '--relya'\n(Did you mean --relay?)" becomes
 * "unknown option '--relya' (did you mean --relay?)".
 */
export function usageMessage(message: string): string {
  return message
    .replace(/^error:\s*/, '')
    .replace(/\s*\n\s*/g, ' ')
    .replace('(Did you mean', '(did you mean')
    .trim();
}

/**
 * Commander checks required options before unknown ones, so `--relya URL` would be reported as "required option
 * '--relay <url>' not specified". Required options are checked here instead, in a preAction hook, which commander
 * runs after its unknown-option check: a misspelt flag is named as such, with a suggestion.
 */
export function deferRequiredOptions(cmd: Command): void {
  const required = cmd.options.filter((o) => o.mandatory);
  if (required.length === 0) return;
  for (const o of required) o.mandatory = false;
  cmd.hook('preAction', (_self, action) => {
    if (action !== cmd) return;
    for (const o of required) {
      if (cmd.getOptionValue(o.attributeName()) === undefined) {
        cmd.error(`error: required option '${o.flags}' not specified`, {
          code: 'commander.missingMandatoryOptionValue',
        });
      }
    }
  });
}
