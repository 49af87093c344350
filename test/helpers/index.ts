export * from './cleanup.js';
export * from './iptables.js';
export * from './names.js';
export * from './netns.js';
export * from './privileges.js';
export * from './process.js';
export * from './wait.js';
export * from './wireguard-go.js';
