// Validates Kubernetes objects against the API's OpenAPI schema with kubernetes-models (a
// maintained library; scripts/deploy_tools.sh installs it): every document of every YAML file
// named. Kinds the library models (core, apps, batch, ..., and prometheus-operator's) are
// validated whole; a custom resource it does not model (Kubeflow's PyTorchJob, JobSet) has every
// pod template inside it validated as a PodTemplateSpec. One line per object; exit 1 when any is
// invalid, 2 on a file that cannot be read or parsed.
//   node validate_k8s.mjs FILE.yaml...     (TAOT_DEPLOY_TOOLS: where the tools are)
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const tools = process.env.TAOT_DEPLOY_TOOLS || "/usr/local/lib/taot-deploy-tools";
const modules = join(tools, "node_modules");
if (!existsSync(join(modules, "kubernetes-models"))) {
  console.error(`validate_k8s: kubernetes-models is not in ${modules}: run ./scripts/setup.sh`);
  process.exit(2);
}
const require = createRequire(join(modules, "noop.js"));
const YAML = require("yaml");

// The library's module for an apiVersion ("v1", "apps/v1", "monitoring.coreos.com/v1"), or null.
function modelModule(apiVersion) {
  for (const pkg of ["kubernetes-models", "@kubernetes-models/prometheus-operator"]) {
    try {
      return require(`${pkg}/${apiVersion}`);
    } catch (e) {
      if (e.code !== "MODULE_NOT_FOUND" && e.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") throw e;
    }
  }
  return null;
}

// Every pod template (a "template" whose spec has containers) inside a custom resource.
function podTemplates(node, path, out) {
  if (node === null || typeof node !== "object") return out;
  for (const [key, value] of Object.entries(node)) {
    const here = `${path}.${key}`;
    if (key === "template" && value?.spec?.containers) out.push([here, value]);
    podTemplates(value, here, out);
  }
  return out;
}

const { PodTemplateSpec } = modelModule("v1");

// "" when `obj` is valid, else why; what was validated goes in `note`.
async function problem(obj, note) {
  if (typeof obj !== "object" || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
    return "not a Kubernetes object (no apiVersion and kind)";
  }
  const mod = modelModule(obj.apiVersion);
  try {
    if (mod && mod[obj.kind]) {
      new mod[obj.kind](obj).validate();
    } else {
      const templates = podTemplates(obj, "", []);
      for (const [, t] of templates) new PodTemplateSpec({ ...t, metadata: t.metadata ?? {} }).validate();
      note.push(`${obj.apiVersion} is not modelled: its ${templates.length} pod template(s) validated`);
    }
    return "";
  } catch (e) {
    return e.message;
  }
}

let invalid = 0;
for (const file of process.argv.slice(2)) {
  let docs;
  try {
    docs = YAML.parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS());
  } catch (e) {
    console.error(`validate_k8s: ${file}: ${e.message}`);
    process.exit(2);
  }
  for (const [i, obj] of docs.entries()) {
    if (obj === null) continue;
    const what = `${file}#${i} ${obj?.kind}/${obj?.metadata?.name}`;
    const note = [];
    const why = await problem(obj, note);
    if (why) invalid++;
    console.log(why ? `INVALID  ${what}: ${why}` : `valid    ${what}${note.length ? ` (${note.join("; ")})` : ""}`);
  }
}
process.exit(invalid ? 1 : 0);
