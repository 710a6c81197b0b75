// Bundles code_editor.js and the CodeMirror packages it uses into one minified ES module,
// labkit/widgets/static/code_editor.js, and writes the licences of every package that ends up
// in it to code_editor.LICENSES.txt beside it. Run by scripts/build_editor.sh after `npm ci`;
// `node build.mjs DIR` writes both files to DIR instead (tests compare them with the shipped).
//
// The output depends only on the locked package versions and this file (no dates, no paths), so
// two builds from package-lock.json give the same bytes. A package whose licence is not in
// ALLOWED stops the build: labkit ships the bundle inside its wheel.

import * as esbuild from "esbuild";
import { readFileSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] || join(here, "..", "labkit", "widgets", "static");
const outFile = join(outDir, "code_editor.js");
const ALLOWED = new Set(["MIT"]);

function packageOf(input) {
  // node_modules/@scope/name/... or node_modules/name/... -> the package's folder
  const parts = input.split("/");
  const i = parts.lastIndexOf("node_modules");
  if (i < 0) return null;
  const n = parts[i + 1].startsWith("@") ? 2 : 1;
  return parts.slice(0, i + 1 + n).join("/");
}

function licenceText(dir) {
  const name = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  return name ? readFileSync(join(dir, name), "utf8").trim() : null;
}

const result = await esbuild.build({
  entryPoints: [join(here, "code_editor.js")],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "none",
  metafile: true,
  write: false,
  absWorkingDir: here,
});

// the packages with code in the output (a file the bundler read and tree-shook away entirely,
// such as @codemirror/search behind the `codemirror` package's index, ships nothing)
const inputs = Object.values(result.metafile.outputs)[0].inputs;
const used = Object.keys(inputs).filter((f) => inputs[f].bytesInOutput > 0);
const dirs = [...new Set(used.map(packageOf).filter(Boolean))];
const pkgs = dirs
  .map((d) => ({ dir: join(here, d), meta: JSON.parse(readFileSync(join(here, d, "package.json"))) }))
  .sort((a, b) => a.meta.name.localeCompare(b.meta.name));
const bad = pkgs.filter((p) => !ALLOWED.has(p.meta.license));
if (bad.length) {
  throw new Error(
    "licence not allowed for shipping: " +
      bad.map((p) => `${p.meta.name}@${p.meta.version} (${p.meta.license})`).join(", "),
  );
}
const missing = pkgs.filter((p) => !existsSync(p.dir) || !licenceText(p.dir));
if (missing.length) {
  throw new Error("no licence file in: " + missing.map((p) => p.meta.name).join(", "));
}

const list = pkgs.map((p) => `${p.meta.name}@${p.meta.version}`).join(", ");
const banner =
  "/* labkit code editor: CodeMirror 6 + Python, bundled by scripts/build_editor.sh.\n" +
  ` * Contains ${list}; each MIT-licensed, full texts in code_editor.LICENSES.txt. */\n`;
const code = banner + result.outputFiles[0].text;
writeFileSync(outFile, code);

const licences = pkgs.map(
  (p) => `${p.meta.name}@${p.meta.version} (${p.meta.license})\n\n${licenceText(p.dir)}\n`,
);
writeFileSync(
  join(outDir, "code_editor.LICENSES.txt"),
  "Third-party code bundled in code_editor.js (scripts/build_editor.sh lists it from the\n" +
    "bundler's own record of the files it read).\n\n" +
    licences.join("\n" + "-".repeat(72) + "\n\n"),
);

const bytes = Buffer.byteLength(code);
const gz = gzipSync(code, { level: 9 }).length;
console.log(`${outFile}: ${(bytes / 1024).toFixed(1)} KiB (${(gz / 1024).toFixed(1)} KiB gzipped)`);
console.log(`packages: ${list}`);
