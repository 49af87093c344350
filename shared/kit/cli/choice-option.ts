/**
 * An option whose value is one of a fixed list: commander lists the choices in --help and shell completion offers
 * them (completion.ts reads argChoices), while the value is checked by oneOf for the project's error form.
 */
import { Option } from 'commander';
import { oneOf } from './parsers.js';

export function choiceOption<T extends string>(
  flags: string,
  description: string,
  choices: readonly T[],
): Option {
  const long = flags.match(/--[a-z0-9-]+/)?.[0] ?? flags;
  return new Option(flags, description).choices(choices).argParser(oneOf<T>(long, choices));
}
