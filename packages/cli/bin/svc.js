#!/usr/bin/env node
require('../dist/main.js').main(process.argv.slice(2)).then(
  (code) => process.exit(code ?? 0),
  (err) => { console.error(err && err.message ? err.message : err); process.exit(1); },
);
