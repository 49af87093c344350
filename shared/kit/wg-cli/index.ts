export * from './dump.js';
export * from './key-file.js';
export * from './keys.js';
export * from './run.js';
export * from './set.js';
