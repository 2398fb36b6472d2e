// Validates a speedscope file against the schema speedscope publishes (npm package `speedscope`,
// dist/release/file-format-schema.json) with ajv, both from tests/node/node_modules (installed by
// scripts/bootstrap with npm ci). Usage: node speedscope_schema.js NODE_MODULES FILE.
// Exit 0 valid, 1 invalid (the errors on stderr), 77 when the packages are not installed.
const path = require('path');
const fs = require('fs');
const [modules, file] = process.argv.slice(2).map((p, i) => i === 0 ? path.resolve(p) : p);
let Ajv, schema;
try {
  Ajv = require(path.join(modules, 'ajv'));
  schema = JSON.parse(fs.readFileSync(
      path.join(modules, 'speedscope', 'dist', 'release', 'file-format-schema.json'), 'utf8'));
} catch (e) {
  console.error('speedscope or ajv not installed in ' + modules + ': ' + e.message);
  process.exit(77);
}
const ajv = new (Ajv.default || Ajv)({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
if (!validate(doc)) {
  console.error(JSON.stringify(validate.errors.slice(0, 20), null, 1));
  process.exit(1);
}
console.log('valid');
