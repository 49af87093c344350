export * from './address.js';
export * from './allocate.js';
export * from './checksum.js';
export * from './icmp.js';
export * from './ipv4.js';
export * from './prefix-table.js';
export * from './udp.js';
