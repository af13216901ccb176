#!/usr/bin/env node
// Validate a .glb or .gltf file with the Khronos glTF-Validator and print its JSON report on stdout.
// Usage: node tools/validate_gltf.mjs FILE   (run `npm install` in tools/ first)
// Exit code: 0 when the report has no errors, 1 when it has errors, 2 when validation could not run.
import { readFile } from "node:fs/promises";
import { dirname, resolve, basename } from "node:path";
import { validateBytes } from "gltf-validator";

const file = process.argv[2];
if (!file) {
  console.error("usage: node tools/validate_gltf.mjs FILE.glb|FILE.gltf");
  process.exit(2);
}
try {
  const bytes = new Uint8Array(await readFile(file));
  const report = await validateBytes(bytes, {
    uri: basename(file),
    maxIssues: 0, // 0 = report every issue
    externalResourceFunction: (uri) =>
      readFile(resolve(dirname(file), decodeURIComponent(uri))).then((b) => new Uint8Array(b)),
  });
  console.log(JSON.stringify(report, null, 2));
  process.exit(report.issues.numErrors > 0 ? 1 : 0);
} catch (error) {
  console.error(`${file}: validation could not run: ${error}`);
  process.exit(2);
}
