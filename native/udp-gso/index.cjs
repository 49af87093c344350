'use strict';
// The compiled addon (node-gyp rebuild, run by `npm ci`); requiring this throws where it was not built.
module.exports = require('./build/Release/udp_gso.node');
