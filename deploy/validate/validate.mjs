// Validates Kubernetes objects against the OpenAPI schema of the pinned Kubernetes version (kubernetes-models 4.5.1:
// Kubernetes 1.33.0), the prometheus-operator CRDs (@kubernetes-models/prometheus-operator 4.4.4: v0.65.1) and the
// CustomResourceDefinitions vendored in the repository (deploy/agent-sandbox/crds: kubernetes-sigs/agent-sandbox),
// whose openAPIV3Schema is compiled with ajv as the API server reads it (a served version only; a deprecated one is
// an error).
//
//   kubectl kustomize deploy/kubernetes | node deploy/validate/validate.mjs
//
// Reads a YAML stream on stdin; prints one JSON line per object, {"object": ..., "errors": [...]}, and exits 1 when
// any object has an error (2 when the input is not YAML). Besides the schema's own checks (types, enums, required
// fields, formats), a field the schema does not name is an error, as the API server's strict field validation makes
// it: the schema's validator is run on a view of the object that records which fields it looked up, and a field of a
// structured object that it never looked up is unknown to the schema.
import { readdirSync, readFileSync } from "node:fs";
import { parse, parseAllDocuments } from "yaml";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const CRD_PACKAGES = { "monitoring.coreos.com": "@kubernetes-models/prometheus-operator" };

/** The vendored CRDs' directories, relative to this file. */
const CRD_DIRS = ["../agent-sandbox/crds"];

/**
 * `schema` as the API server applies a structural schema: an object with `properties` and no
 * `additionalProperties` or `x-kubernetes-preserve-unknown-fields` has no other field (strict field validation).
 */
function structural(schema) {
  if (Array.isArray(schema)) return schema.map(structural);
  if (schema === null || typeof schema !== "object") return schema;
  const copy = Object.fromEntries(Object.entries(schema).map(([k, v]) =>
    [k, k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, structural(s)])) : structural(v)]));
  if (copy.properties && !("additionalProperties" in copy) && !copy["x-kubernetes-preserve-unknown-fields"]) {
    copy.additionalProperties = false;
  }
  return copy;
}

/** `apiVersion kind` → {validate, deprecated} for every served version of every vendored CRD, compiled when used. */
function loadCrds() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  for (const format of ["int32", "int64", "byte", "double", "float", "quantity"]) ajv.addFormat(format, true);
  const crds = new Map();
  for (const dir of CRD_DIRS) {
    const url = new URL(`${dir}/`, import.meta.url);
    for (const file of readdirSync(url).filter((f) => f.endsWith(".yaml")).sort()) {
      const crd = parse(readFileSync(new URL(file, url), "utf8"));
      for (const version of crd.spec.versions.filter((v) => v.served)) {
        let compiled = null;
        crds.set(`${crd.spec.group}/${version.name} ${crd.spec.names.kind}`, {
          validator: () => (compiled ??= ajv.compile(structural(version.schema.openAPIV3Schema))),
          deprecated: version.deprecated ? version.deprecationWarning ?? "deprecated" : null,
        });
      }
    }
  }
  return crds;
}

const CRDS = loadCrds();

/** The errors of an object of a vendored CRD's kind. */
function validateCrd(crd, object) {
  if (crd.deprecated) return [`apiVersion ${object.apiVersion} is deprecated: ${crd.deprecated}`];
  const validate = crd.validator();
  if (validate(object)) return [];
  return validate.errors.map((err) => err.keyword === "additionalProperties"
    ? `${err.instancePath}/${pointer(err.params.additionalProperty)} is not a field of the schema`
    : `${err.instancePath || "/"} ${err.message}`);
}

/** The API group of `apiVersion`: "" for the core group ("v1"). */
function groupOf(apiVersion) {
  return apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
}

/** The model class of `apiVersion`/`kind`, or null when no pinned schema has it. */
async function modelOf(apiVersion, kind) {
  const pkg = CRD_PACKAGES[groupOf(apiVersion)] ?? "kubernetes-models";
  try {
    const module = await import(`${pkg}/${apiVersion}`);
    const model = module[kind];
    return model && model.apiVersion === apiVersion && model.kind === kind ? model : null;
  } catch (e) {
    if (e.code === "ERR_PACKAGE_PATH_NOT_EXPORTED" || e.code === "ERR_MODULE_NOT_FOUND") return null;
    throw e;
  }
}

/** A copy of `value` whose objects record the fields read from them, in `views` (path, object, fields read). */
function recorded(value, path, views) {
  if (value === null || typeof value !== "object") return value;
  const read = new Set();
  const copy = Array.isArray(value)
    ? value.map((item, i) => recorded(item, `${path}/${i}`, views))
    : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, recorded(v, `${path}/${pointer(k)}`, views)]));
  if (!Array.isArray(value)) views.push({ path, value, read });
  return new Proxy(copy, {
    get(target, key, receiver) {
      if (typeof key === "string") read.add(key);
      return Reflect.get(target, key, receiver);
    },
  });
}

function pointer(key) {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The errors of one object: the schema's, then its unknown fields. */
async function validate(object) {
  // kubernetes-models keeps the removed beta APIs too (extensions/v1beta1, autoscaling/v2beta2...); none is served by
  // 1.33, which serves no beta API by default either (new betas are off by default since 1.24)
  const apiVersion = String(object?.apiVersion);
  const kind = String(object?.kind);
  const crd = CRDS.get(`${apiVersion} ${kind}`);
  if (crd) return validateCrd(crd, object);
  if (!(groupOf(apiVersion) in CRD_PACKAGES) && /^v\d+(alpha|beta)\d+$/.test(apiVersion.split("/").pop())) {
    return [`apiVersion ${apiVersion} is not served by Kubernetes 1.33 (removed, or off by default)`];
  }
  const model = await modelOf(apiVersion, kind);
  if (!model) return [`no schema for apiVersion ${apiVersion} kind ${kind} in the pinned versions`];
  const views = [];
  const errors = [];
  try {
    // the model's validate() runs the schema's compiled validator on `this`: here, the recording view
    model.prototype.validate.call(recorded(object, "", views));
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    errors.push(...e.errors.map((err) => `${err.instancePath || "/"} ${err.message}`));
  }
  for (const { path, value, read } of views) {
    // an object none of whose fields was looked up is free-form in the schema (or under a field already reported)
    if (read.size === 0) continue;
    for (const key of Object.keys(value)) {
      if (!read.has(key)) errors.push(`${path}/${pointer(key)} is not a field of the schema`);
    }
  }
  return errors;
}

const input = await new Promise((resolve, reject) => {
  let text = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
  process.stdin.on("error", reject);
});
let failed = false;
for (const doc of parseAllDocuments(input)) {
  if (doc.errors.length > 0) {
    console.error(`not YAML: ${doc.errors[0].message}`);
    process.exit(2);
  }
  const object = doc.toJS();
  if (object === null) continue;
  const errors = await validate(object);
  failed ||= errors.length > 0;
  console.log(JSON.stringify({ object, errors }));
}
process.exit(failed ? 1 : 0);
