// Build the widget bundles into the folder given as the first argument
// (arknb/static for the committed bundle, a temp folder for check_bundle.sh).
// Deterministic: same sources and esbuild version give byte-identical output.
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.resolve(process.argv[2] || path.join(here, "..", "arknb", "static"));
const common = { absWorkingDir: here, bundle: true, minify: true, outdir, logLevel: "warning", legalComments: "eof" };

await esbuild.build({
  ...common,
  entryPoints: { chat: "src/chat.js", timeline: "src/timeline.js", compare: "src/compare.js", graph: "src/graph.js" },
  format: "esm",
  target: "es2020",
  platform: "browser",
  charset: "utf8",
});
await esbuild.build({ ...common, entryPoints: { chat: "src/chat.css", timeline: "src/timeline.css", compare: "src/compare.css", graph: "src/graph.css" } });
