#!/usr/bin/env bash
# Makes a small CA, a server certificate and client certificates with openssl,
# for tests and for sites without a PKI.
#   deploy/gen-certs.sh OUT_DIR SERVER_NAME[,ALT_NAME...] [CLIENT_NAME[,ALT_NAME...]...]
# Example: deploy/gen-certs.sh /etc/cmax/tls head-node,10.0.0.5 node-1,10.0.0.11 node-2 cmaxctl
# Writes ca.pem ca.key server.pem server.key and CLIENT.pem CLIENT.key.
# IP addresses among the names become IP subject alternative names. A node's
# certificate names the node (its agent's --node-name) and may name the
# addresses the agent advertises: under mutual TLS the coordinator keeps
# only declared addresses that the certificate names or that the agent
# connects from (docs/security.md). Operators get a certificate whose name
# is no node's (cmaxctl): a node's certificate never acts as an operator.
set -euo pipefail
out=${1:?usage: gen-certs.sh OUT_DIR SERVER_NAME[,ALT...] [CLIENT...]}
names=${2:?server name}
shift 2
mkdir -p "$out"
umask 077
cd "$out"
days=825
if [[ ! -f ca.pem ]]; then
  openssl req -x509 -newkey rsa:3072 -nodes -keyout ca.key -out ca.pem -days "$days" \
    -subj "/CN=cmax test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
sans() {  # sans NAME[,NAME...]: the subjectAltName value
  local out="" n parts
  IFS=',' read -ra parts <<< "$1"
  for n in "${parts[@]}"; do
    if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then out+="IP:$n,"; else out+="DNS:$n,"; fi
  done
  echo "${out%,}"
}
san=$(sans "$names")
IFS=',' read -ra parts <<< "$names"
issue() {  # name cn san usage
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\n' "$3" "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" \
    -days "$days" -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
issue server "${parts[0]}" "$san" serverAuth
for c in "$@"; do
  [[ $c =~ ^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.:-]+)*$ ]] ||
    { echo "gen-certs.sh: bad client name '$c'" >&2; exit 2; }
  issue "${c%%,*}" "${c%%,*}" "$(sans "$c")" clientAuth
done
chmod 600 ./*.key
echo "gen-certs: wrote $(ls "$out" | tr '\n' ' ')in $out"
