// Validates the rendered Kubernetes manifests of deploy/kubernetes
// (tests/kubernetes/run.sh renders them; docs/kubernetes.md).
//
//   node validate.mjs RENDERED_DIR
//
// RENDERED_DIR holds one folder per kubectl that rendered the targets
// (RENDERED_DIR/<kubectl>/<target>.yaml). Every kubectl must give the same
// objects; those objects are then checked:
// - against the Kubernetes API's schema of their apiVersion and kind, as
//   kubernetes-models (and @kubernetes-models/prometheus-operator for the
//   ServiceMonitor) compiles it: types, required fields, formats;
// - for fields their kind does not have (a misspelt `livenesProbe` is
//   ignored by those schemas and refused by the API server's strict field
//   validation): each object is type-checked by TypeScript against the same
//   package's interface of its kind;
// - for what docs/kubernetes.md promises: nobody runs as root, a read-only
//   root file system, the probes, config.json mounted as a folder the
//   kubelet updates, a grace period longer than the drain;
// - for secrets: no Secret object, no key written into the manifests.
// A self-test first shows that the checks refuse a broken object.
// Prints one line per check and `kubernetes: N passed, M failed`.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import ts from "typescript";

const here = path.dirname(fileURLToPath(import.meta.url));
const renderedDir = process.argv[2];
if (!renderedDir) {
  console.error("usage: node validate.mjs RENDERED_DIR");
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, problems) {
  const list = Array.isArray(problems) ? problems : problems ? [problems] : [];
  if (list.length === 0) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed++;
    console.log(`not ok - ${name}`);
    for (const p of list) console.log(`    ${p}`);
  }
}

// apiVersion -> the module that holds its kinds' models and interfaces.
function modelModule(apiVersion) {
  if (apiVersion === "monitoring.coreos.com/v1") {
    return "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
  }
  return `kubernetes-models/${apiVersion}`;
}

async function schemaProblems(obj) {
  let mod;
  try {
    mod = await import(modelModule(obj.apiVersion));
  } catch {
    return [`no schema for apiVersion ${obj.apiVersion}`];
  }
  const Model = mod[obj.kind];
  if (typeof Model !== "function") return [`no schema for ${obj.apiVersion} ${obj.kind}`];
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return [String(e.message ?? e)];
  }
}

// Type-checks each object against its kind's interface; returns the
// problems of each, by index. Excess properties are what this adds.
function strictFieldProblems(objects) {
  const dir = fs.mkdtempSync(path.join(here, ".strict-"));
  try {
    const lines = ["export {};"];
    const imports = new Map();
    objects.forEach((obj, i) => {
      const alias = `T${i}`;
      imports.set(alias, `import type { I${obj.kind} as ${alias} } from "${modelModule(obj.apiVersion)}";`);
      lines.push(`export const o${i}: ${alias} = ${JSON.stringify(obj)};`);
    });
    const header = [...imports.values()];
    const file = path.join(dir, "objects.ts");
    fs.writeFileSync(file, [...header, ...lines].join("\n") + "\n");
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
    });
    const problems = objects.map(() => []);
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const text = ts.flattenDiagnosticMessageText(d.messageText, " ");
      if (!d.file) {
        problems.forEach((p) => p.push(text));
        continue;
      }
      const line = d.file.getLineAndCharacterOfPosition(d.start ?? 0).line;
      // Line 0..header.length: the imports; then "export {};", then o0, o1...
      const index = line - header.length - 1;
      if (index >= 0 && index < objects.length) problems[index].push(text);
      else problems.forEach((p) => p.push(text));
    }
    return problems;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function allProblems(objects) {
  const strict = strictFieldProblems(objects);
  const out = [];
  for (let i = 0; i < objects.length; i++) {
    out.push([...(await schemaProblems(objects[i])), ...strict[i]]);
  }
  return out;
}

const secretName = /key|token|secret|password|credential/i;

function secretProblems(obj) {
  const problems = [];
  if (obj.kind === "Secret") problems.push("a Secret is rendered: its values would be in the manifests");
  const pod = obj.spec?.template?.spec;
  for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
    for (const e of c.env ?? []) {
      if (secretName.test(e.name) && e.value !== undefined) {
        problems.push(`container ${c.name}: ${e.name} has a literal value; take it from a Secret`);
      }
    }
  }
  if (obj.kind === "ConfigMap") {
    for (const [name, text] of Object.entries(obj.data ?? {})) {
      if (!name.endsWith(".json")) continue;
      let json;
      try {
        json = JSON.parse(text);
      } catch (e) {
        problems.push(`${name} is not JSON: ${e.message}`);
        continue;
      }
      for (const k of ["api_key", "admin_api_key"]) {
        if (k in json) problems.push(`${name} holds ${k}: keys belong in a Secret`);
      }
      for (const [i, key] of (json.auth?.keys ?? []).entries()) {
        if ("key" in key) problems.push(`${name}: auth.keys[${i}] holds a key, not its key_sha256`);
      }
    }
  }
  return problems;
}

function seconds(value) {
  const n = Number(value);
  return Number.isFinite(n) ? n : NaN;
}

// What docs/kubernetes.md promises of the router's pod.
function podProblems(obj, objects) {
  const pod = obj.spec?.template?.spec;
  if (!pod) return [];
  const problems = [];
  const psc = pod.securityContext ?? {};
  if (psc.runAsNonRoot !== true) problems.push("pod: runAsNonRoot is not true");
  if (psc.runAsUser === 0) problems.push("pod: runAsUser is 0");
  if (pod.automountServiceAccountToken !== false) {
    problems.push("pod: the service account token is mounted (the router needs none)");
  }
  for (const c of pod.initContainers ?? []) {
    problems.push(`init container ${c.name}: none is expected (one would need root to chown)`);
  }
  for (const c of pod.containers ?? []) {
    const sc = c.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${c.name}: root file system is writable`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${c.name}: privilege escalation allowed`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) problems.push(`${c.name}: capabilities not dropped`);
    if (sc.runAsUser === 0 || sc.runAsNonRoot === false) problems.push(`${c.name}: runs as root`);
    if (c.livenessProbe?.httpGet?.path !== "/live") problems.push(`${c.name}: liveness probe is not GET /live`);
    if (c.readinessProbe?.httpGet?.path !== "/ready") problems.push(`${c.name}: readiness probe is not GET /ready`);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));
    const configDir = env.LEMONADE_CONFIG_DIR?.value;
    const mount = (c.volumeMounts ?? []).find((m) => m.mountPath === configDir);
    const volume = mount && (pod.volumes ?? []).find((v) => v.name === mount.name);
    if (!volume?.configMap) problems.push(`${c.name}: LEMONADE_CONFIG_DIR is not a ConfigMap's folder`);
    else if (mount.subPath) problems.push(`${c.name}: config mounted with subPath (the kubelet never updates it)`);
    else if (!objects.some((o) => o.kind === "ConfigMap" && o.metadata.name === volume.configMap.name)) {
      problems.push(`${c.name}: ConfigMap ${volume.configMap.name} is not rendered`);
    }
    const cache = (c.volumeMounts ?? []).find((m) => m.mountPath === "/var/lib/lemonade");
    const cacheVolume = cache && (pod.volumes ?? []).find((v) => v.name === cache.name);
    if (!cacheVolume?.hostPath && !cacheVolume?.persistentVolumeClaim) {
      problems.push(`${c.name}: the cache is neither a hostPath nor a PersistentVolumeClaim`);
    }
    const args = c.args ?? [];
    const drain = seconds(args[args.indexOf("--drain-timeout") + 1]);
    const pause = seconds(c.lifecycle?.preStop?.sleep?.seconds ?? 0);
    const grace = seconds(pod.terminationGracePeriodSeconds ?? 30);
    if (!(drain + pause < grace)) {
      problems.push(`${c.name}: grace period ${grace} s does not cover preStop ${pause} s + drain ${drain} s`);
    }
  }
  return problems;
}

function key(obj) {
  return `${obj.kind}/${obj.metadata?.name}`;
}

function load(file) {
  return YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))
    .map((d) => d.toJS())
    .filter((o) => o);
}

// The self-test: a broken object must be refused, once by the schema and
// once by the field check, or the checks below prove nothing.
{
  const good = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "self-test" },
    spec: {
      selector: { matchLabels: { a: "b" } },
      template: {
        metadata: { labels: { a: "b" } },
        spec: { containers: [{ name: "c", image: "i", ports: [{ containerPort: 8000 }] }] },
      },
    },
  };
  const wrongType = structuredClone(good);
  wrongType.spec.template.spec.containers[0].ports[0].containerPort = "8000";
  const unknownField = structuredClone(good);
  unknownField.spec.template.spec.containers[0].livenesProbe = { httpGet: { path: "/live", port: 8000 } };
  const [g, w, u] = await allProblems([good, wrongType, unknownField]);
  check("self-test: a valid Deployment passes", g);
  check("self-test: a port given as a string is refused", w.length ? [] : ["accepted"]);
  check("self-test: a misspelt field (livenesProbe) is refused", u.length ? [] : ["accepted"]);
}

const kubectls = fs.readdirSync(renderedDir).filter((d) => fs.statSync(path.join(renderedDir, d)).isDirectory());
if (kubectls.length === 0) {
  check("rendered manifests found", [`nothing under ${renderedDir}`]);
} else {
  const [first, ...others] = kubectls;
  const targets = fs.readdirSync(path.join(renderedDir, first)).filter((f) => f.endsWith(".yaml"));
  check(`${targets.length} targets rendered by ${kubectls.join(", ")}`, targets.length ? [] : ["none"]);
  for (const target of targets) {
    const name = target.replace(/\.yaml$/, "");
    const objects = load(path.join(renderedDir, first, target));
    const canonical = (objs) => JSON.stringify([...objs].sort((a, b) => key(a).localeCompare(key(b))));
    for (const other of others) {
      const file = path.join(renderedDir, other, target);
      const theirs = fs.existsSync(file) ? load(file) : null;
      check(
        `${name}: ${other} renders the same objects as ${first}`,
        theirs === null ? ["not rendered"] : canonical(theirs) === canonical(objects) ? [] : ["the objects differ"],
      );
    }
    check(`${name}: renders objects`, objects.length ? [] : ["no object"]);
    const problems = await allProblems(objects);
    objects.forEach((obj, i) => {
      check(`${name}: ${key(obj)} (${obj.apiVersion}) matches its kind's schema`, problems[i]);
      check(`${name}: ${key(obj)} holds no secret`, secretProblems(obj));
      if (obj.spec?.template?.spec) check(`${name}: ${key(obj)} runs as docs/kubernetes.md says`, podProblems(obj, objects));
    });
  }
}

console.log(`kubernetes: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
