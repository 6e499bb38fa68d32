#!/usr/bin/env python3
"""Checks deploy/k8s as a cluster operator would before applying it.

Every object is well formed; the names that tie objects together agree
(Service <-> StatefulSet, Secrets <-> the secretGenerator, mounts <-> the
paths in the arguments, the agent's --coordinator <-> the Service); every
flag in a container's arguments is one the binary's --help lists; one image,
tagged with the project's version; and no privilege beyond the ones
docs/kubernetes.md justifies. make-secrets.sh writes what the
secretGenerator reads, with a server certificate for the name the agents
dial. Where kubectl is installed, `kubectl kustomize` renders the tree too.

  k8s_test.py --source-dir DIR --bin-dir DIR
Exit 0 when every check holds; otherwise each failure is printed, exit 1.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("k8s_test: python3-yaml is missing: run deploy/install-deps.sh --with-tests")
    sys.exit(1)

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
    return cond


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def containers(obj):
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    return spec, spec.get("containers", [])


def flags_of(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    # absl prints "--name (help)"; usage lines print "--name-with-dashes".
    return {m.replace("_", "-") for m in re.findall(r"--([a-z][a-z0-9_-]*)", text)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--bin-dir", required=True)
    a = ap.parse_args()
    k8s = os.path.join(a.source_dir, "deploy", "k8s")

    kust = yaml.safe_load(open(os.path.join(k8s, "kustomization.yaml")))
    check(kust.get("kind") == "Kustomization", "kustomization.yaml is not a Kustomization")
    ns = kust.get("namespace")
    check(ns == "cmax", f"kustomization namespace is {ns!r}, expected 'cmax'")
    resources = kust.get("resources", [])
    on_disk = sorted(f for f in os.listdir(k8s)
                     if f.endswith(".yaml") and f != "kustomization.yaml")
    check(sorted(resources) == on_disk,
          f"kustomization resources {sorted(resources)} differ from the manifests {on_disk}")

    objs = []
    for r in resources:
        for d in load_docs(os.path.join(k8s, r)):
            name = d.get("metadata", {}).get("name")
            where = f"{r}: {d.get('kind')}/{name}"
            check(isinstance(d.get("apiVersion"), str) and d["apiVersion"], f"{where}: no apiVersion")
            check(d.get("kind") in {"Namespace", "Service", "StatefulSet", "DaemonSet"},
                  f"{where}: unexpected kind")
            check(isinstance(name, str) and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name),
                  f"{where}: bad metadata.name")
            d["_file"] = r
            objs.append(d)
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    for kind in ("Namespace", "Service", "StatefulSet", "DaemonSet"):
        check(len(by_kind.get(kind, [])) == 1, f"expected one {kind}, found {len(by_kind.get(kind, []))}")
    if FAILURES:
        return report()
    nsobj, svc = by_kind["Namespace"][0], by_kind["Service"][0]
    sts, ds = by_kind["StatefulSet"][0], by_kind["DaemonSet"][0]
    check(nsobj["metadata"]["name"] == ns, "the Namespace object is not the kustomization's namespace")

    # Workloads: selectors match their pod labels; the Service selects the coordinator.
    for w in (sts, ds):
        labels = w["spec"]["template"]["metadata"].get("labels", {})
        sel = w["spec"]["selector"].get("matchLabels", {})
        check(sel and all(labels.get(k) == v for k, v in sel.items()),
              f"{w['kind']}: selector {sel} does not match pod labels {labels}")
    sts_labels = sts["spec"]["template"]["metadata"]["labels"]
    check(all(sts_labels.get(k) == v for k, v in svc["spec"]["selector"].items()),
          "the Service does not select the coordinator's pods")
    ds_labels = ds["spec"]["template"]["metadata"]["labels"]
    check(not all(ds_labels.get(k) == v for k, v in svc["spec"]["selector"].items()),
          "the Service also selects the agents")
    check(sts["spec"].get("serviceName") == svc["metadata"]["name"],
          "StatefulSet.serviceName is not the Service")
    check(sts["spec"].get("replicas") == 1, "the coordinator must run as one replica (one store)")
    check(sts["spec"].get("volumeClaimTemplates"), "the coordinator has no persistent volume")

    # Secrets: every secret a pod mounts is generated, with the keys it uses.
    generated = {}
    for g in kust.get("secretGenerator", []):
        keys = {}
        for f in g.get("files", []):
            key, _, path = f.partition("=")
            keys[key] = path or key
        generated[g["name"]] = keys

    # A node's root holds what the agent pod mounts: the agents' credential,
    # never a secret with the operators' token (docs/security.md).
    ds_spec, _ = containers(ds)
    for v in ds_spec.get("volumes", []):
        if "secret" in v:
            check("token" not in generated.get(v["secret"]["secretName"], {}),
                  f"the agent pod mounts secret {v['secret']['secretName']}, which holds the "
                  "operators' token")

    port_by_name = {}
    image_names = set()
    for w in (sts, ds):
        spec, cs = containers(w)
        check(len(cs) == 1, f"{w['kind']}: expected one container")
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        vct = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
        for v in vols.values():
            if "secret" in v:
                sname = v["secret"]["secretName"]
                check(sname in generated, f"{w['kind']}: secret {sname} is not generated")
                for item in v["secret"].get("items", []):
                    check(item["key"] in generated.get(sname, {}),
                          f"{w['kind']}: secret {sname} has no key {item['key']}")
        for c in cs:
            image_names.add(c.get("image"))
            mounts = c.get("volumeMounts", [])
            for m in mounts:
                check(m["name"] in vols or m["name"] in vct,
                      f"{w['kind']}: mount {m['name']} names no volume")
            for p in c.get("ports", []):
                port_by_name[p["name"]] = p["containerPort"]
            binary = os.path.basename(c["command"][0])
            check(c["command"][0].startswith("/usr/bin/"),
                  f"{w['kind']}: command {c['command'][0]} is not where the image (its Debian packages) installs it")
            path = os.path.join(a.bin_dir, binary)
            if not check(os.access(path, os.X_OK), f"{binary} not built in {a.bin_dir}"):
                continue
            known = flags_of(path)
            env_names = {e["name"] for e in c.get("env", [])}
            for arg in c.get("args", []):
                m = re.fullmatch(r"--([a-z][a-z0-9-]*)(?:=(.*))?", arg)
                if not check(m, f"{w['kind']}: argument {arg!r} is not --flag=value"):
                    continue
                flag, value = m.group(1), m.group(2) or ""
                check(flag in known, f"{w['kind']}: {binary} has no flag --{flag} (its --help)")
                for ref in re.findall(r"\$\(([A-Z_]+)\)", value):
                    check(ref in env_names, f"{w['kind']}: $({ref}) in {arg} is not in env")
                # A file under /etc/cmax must come from a mounted volume.
                if value.startswith("/etc/cmax/"):
                    mount = next((mm for mm in mounts if value.startswith(mm["mountPath"] + "/")), None)
                    if check(mount, f"{w['kind']}: {arg}: no volume mounted there"):
                        v = vols.get(mount["name"], {})
                        if "secret" in v:
                            key = value[len(mount["mountPath"]) + 1:]
                            keys = [i["path"] for i in v["secret"].get("items", [])] or \
                                list(generated.get(v["secret"]["secretName"], {}))
                            check(key in keys, f"{w['kind']}: {arg}: secret has no {key}")
    svc_port = svc["spec"]["ports"][0]
    check(svc_port.get("targetPort") in port_by_name,
          "the Service's targetPort names no container port")

    # The agents dial the Service by its cluster name and port.
    _, (agent,) = containers(ds)
    coord = next((x.split("=", 1)[1] for x in agent["args"] if x.startswith("--coordinator=")), "")
    expect = f"{svc['metadata']['name']}.{ns}.svc:{svc_port['port']}"
    check(coord == expect, f"agent --coordinator={coord}, expected {expect}")
    check(ds["spec"]["template"]["spec"].get("dnsPolicy") == "ClusterFirstWithHostNet",
          "a hostNetwork agent needs dnsPolicy ClusterFirstWithHostNet to resolve the Service")
    check(any(x == "--node-name=$(NODE_NAME)" for x in agent["args"]), "agent node name not from NODE_NAME")
    env = {e["name"]: e for e in agent.get("env", [])}
    check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
          == "spec.nodeName", "NODE_NAME is not the downward API's spec.nodeName")

    # One image, tagged with the project's version.
    check(image_names == {"cmax"}, f"containers use images {image_names}, expected the one 'cmax'")
    version = re.search(r"project\(cmax VERSION ([0-9.]+)",
                        open(os.path.join(a.source_dir, "CMakeLists.txt")).read()).group(1)
    imgs = {i["name"]: i for i in kust.get("images", [])}
    check(imgs.get("cmax", {}).get("newTag") == version,
          f"kustomization tags cmax {imgs.get('cmax', {}).get('newTag')!r}, project version {version}")

    # Privileges: the coordinator has none; the agent has exactly what
    # docs/kubernetes.md justifies.
    sspec, (coord_c,) = containers(sts)
    sc = coord_c.get("securityContext", {})
    check(sspec.get("securityContext", {}).get("runAsNonRoot") is True, "coordinator may run as root")
    check(sc.get("allowPrivilegeEscalation") is False, "coordinator allows privilege escalation")
    check(sc.get("readOnlyRootFilesystem") is True, "coordinator's root file system is writable")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], "coordinator keeps capabilities")
    check(not sc.get("privileged") and not any(sspec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")),
          "coordinator has host privileges")
    check(not any("hostPath" in v for v in sspec.get("volumes", [])), "coordinator mounts host paths")

    dspec, (agent_c,) = containers(ds)
    # Neither talks to the Kubernetes API: no service-account token in either
    # pod, so a compromised suite or handler holds no cluster credential.
    for name, spec in (("coordinator", sspec), ("agent", dspec)):
        check(spec.get("automountServiceAccountToken") is False,
              f"the {name} pod mounts a service-account token (automountServiceAccountToken)")
    granted = set()
    if agent_c.get("securityContext", {}).get("privileged"):
        granted.add("privileged")
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if dspec.get(k):
            granted.add(k)
    for cap in agent_c.get("securityContext", {}).get("capabilities", {}).get("add", []):
        granted.add(f"capability {cap}")
    for v in dspec.get("volumes", []):
        if "hostPath" in v:
            granted.add(f"hostPath {v['hostPath']['path']}")
    justified = {"privileged", "hostNetwork", "hostPID", "hostPath /", "hostPath /var/lib/cmax-agent"}
    check(granted <= justified, f"agent privileges not justified by docs/kubernetes.md: {sorted(granted - justified)}")
    doc = os.path.join(a.source_dir, "docs", "kubernetes.md")
    if check(os.path.isfile(doc), "docs/kubernetes.md is missing (the README's map links it)"):
        body = open(doc).read()
        for g in sorted(granted):
            # A bullet of its own: "- `privileged`: ..." or "- hostPath `/`...".
            word = f"- hostPath `{g.split(' ', 1)[1]}`" if g.startswith("hostPath") else f"- `{g}`"
            check(word in body, f"docs/kubernetes.md does not justify {g} ({word!r})")
        check("labels and taints" in body, "docs/kubernetes.md does not say node labels and taints are left for later")
    host_root = next((m for m in agent_c["volumeMounts"] if m["mountPath"] == "/host"), None)
    check(host_root is not None and host_root.get("readOnly") is True, "the host's root is not mounted read-only")

    # make-secrets.sh writes what the secretGenerator reads.
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "k8s")
        shutil.copytree(k8s, copy, ignore=shutil.ignore_patterns("secrets"))
        out = os.path.join(copy, "secrets")
        r = subprocess.run([os.path.join(k8s, "make-secrets.sh"), "--out", out],
                           capture_output=True, text=True, timeout=120)
        if check(r.returncode == 0, f"make-secrets.sh failed: {r.stderr[-500:]}"):
            for g in generated.values():
                for path in g.values():
                    f = os.path.join(copy, path)
                    check(os.path.isfile(f) and os.path.getsize(f) > 0, f"make-secrets.sh did not write {path}")
                    if os.path.isfile(f):
                        check(os.stat(f).st_mode & 0o077 == 0, f"{path} is readable by others")
            san = subprocess.run(["openssl", "x509", "-in", os.path.join(out, "tls.crt"), "-noout",
                                  "-ext", "subjectAltName"], capture_output=True, text=True).stdout
            check(f"DNS:{coord.rsplit(':', 1)[0]}" in san, f"server certificate lacks {coord}: {san}")
            check("IP Address:127.0.0.1" in san, "server certificate lacks 127.0.0.1 (cmaxctl in the pod)")
            bad = subprocess.run([os.path.join(k8s, "make-secrets.sh"), "--namespace", "Bad;ns", "--out", out],
                                 capture_output=True, text=True, timeout=30)
            check(bad.returncode == 2 and "bad namespace" in bad.stderr, "make-secrets.sh took a bad namespace")
        kubectl = shutil.which("kubectl")
        if kubectl:
            r = subprocess.run([kubectl, "kustomize", copy], capture_output=True, text=True, timeout=120)
            if check(r.returncode == 0, f"kubectl kustomize failed: {r.stderr[-800:]}"):
                rendered = [d for d in yaml.safe_load_all(r.stdout) if d]
                secrets = {d["metadata"]["name"] for d in rendered if d["kind"] == "Secret"}
                check(len(secrets) == 3, f"rendered secrets: {secrets}")
                for d in rendered:
                    check(d["metadata"].get("namespace", ns) == ns or d["kind"] == "Namespace",
                          f"rendered {d['kind']} outside {ns}")
                    if d["kind"] in ("StatefulSet", "DaemonSet"):
                        for v in d["spec"]["template"]["spec"]["volumes"]:
                            if "secret" in v:
                                check(v["secret"]["secretName"] in secrets,
                                      f"rendered {d['kind']} mounts unknown secret {v['secret']['secretName']}")
                print(f"k8s_test: kubectl kustomize rendered {len(rendered)} objects")
        else:
            print("k8s_test: kubectl not installed: the kustomize rendering was not checked "
                  "(the manifests were parsed and checked above)")
    return report()


def report():
    for f in FAILURES:
        print("FAIL:", f)
    if FAILURES:
        return 1
    print("k8s_test: every check holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
