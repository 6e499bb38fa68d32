#!/usr/bin/env bash
# Writes what kustomization.yaml's secretGenerator reads into
# deploy/k8s/secrets/ (mode 0600, git-ignored): a random bearer token, and a
# CA with a server certificate for the coordinator's Service names.
#   deploy/k8s/make-secrets.sh [--namespace cmax] [--out DIR]
# Existing files are kept (rerun after deleting them to rotate).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ns=cmax
out=$here/secrets
while [[ $# -gt 0 ]]; do
  case $1 in
    --namespace) ns=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-secrets.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $ns =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || { echo "make-secrets.sh: bad namespace '$ns'" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-secrets.sh: needs openssl" >&2; exit 2; }
umask 077
mkdir -p "$out"
for t in token agent-token; do
  if [[ ! -s $out/$t ]]; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$out/$t"
  fi
done
if [[ ! -s $out/tls.crt ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  svc=cmax-coordinator
  # The names agents (cmax-coordinator.<ns>.svc) and cmaxctl inside the
  # coordinator's pod (127.0.0.1) connect to.
  "$here/../gen-certs.sh" "$tmp" \
    "$svc.$ns.svc,$svc,$svc.$ns,$svc.$ns.svc.cluster.local,localhost,127.0.0.1" >/dev/null
  cp "$tmp/server.pem" "$out/tls.crt"
  cp "$tmp/server.key" "$out/tls.key"
  cp "$tmp/ca.pem" "$out/ca.crt"
fi
chmod 0600 "$out"/*
echo "make-secrets: token, agent-token, tls.crt, tls.key, ca.crt in $out"
