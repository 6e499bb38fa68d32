#!/usr/bin/env bash
# Test hosts: network namespaces on a private bridge, made and removed by the
# tests themselves (the only places besides loopback that tests send traffic).
#
#   tests/hosts.sh up   PREFIX N    create PREFIX-0 .. PREFIX-(N-1) and PREFIX-hub
#   tests/hosts.sh down PREFIX      remove them and the bridge
#   tests/hosts.sh cut  PREFIX I    take host I's link down (partition)
#   tests/hosts.sh heal PREFIX I    bring it back
#   tests/hosts.sh slow PREFIX I RATE   limit host I's link (tc tbf), e.g. 50mbit
#   tests/hosts.sh block PREFIX I J     drop host I's traffic to host J
#
# Addresses: 10.251.K.1 is the hub (where the coordinator runs), 10.251.K.(10+i)
# host i, where K is derived from PREFIX so parallel tests do not collide.
# Prints "ADDR hub 10.251.K.1" and "ADDR i 10.251.K.x" lines on `up`.
set -euo pipefail
cmd=${1:-}; prefix=${2:-}
[[ -n $cmd && -n $prefix ]] || { sed -n '2,16p' "$0"; exit 2; }
[[ $prefix =~ ^[a-z0-9]{1,8}$ ]] || { echo "hosts.sh: PREFIX must be 1-8 of [a-z0-9]" >&2; exit 2; }
k=$(( $(printf '%s' "$prefix" | cksum | cut -d' ' -f1) % 200 + 20 ))
br="cbr$prefix"
net="10.251.$k"

veth_of() { echo "cv${prefix}$1"; }   # root side; peer is eth0 inside

case $cmd in
  up)
    n=${3:?count}
    ip link add "$br" type bridge
    ip link set "$br" up
    for i in hub $(seq 0 $((n - 1))); do
      ns="$prefix-$i"
      if [[ $i == hub ]]; then addr="$net.1"; else addr="$net.$((10 + i))"; fi
      ip netns add "$ns"
      ip link add "$(veth_of "$i")" type veth peer name eth0 netns "$ns"
      ip link set "$(veth_of "$i")" master "$br" up
      ip -n "$ns" addr add "$addr/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
      echo "ADDR $i $addr"
    done
    ;;
  down)
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$prefix-" || true); do
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "$br" 2>/dev/null || true
    ;;
  cut)  ip link set "$(veth_of "${3:?host}")" down ;;
  heal) ip link set "$(veth_of "${3:?host}")" up ;;
  slow) tc qdisc replace dev "$(veth_of "${3:?host}")" root tbf rate "${4:?rate}" burst 32kbit latency 400ms ;;
  block)
    j=${4:?target}
    ip netns exec "$prefix-${3:?host}" iptables -A OUTPUT -d "$net.$((10 + j))" -j DROP 2>/dev/null \
      || ip -n "$prefix-$3" route add blackhole "$net.$((10 + j))/32"
    ;;
  *) echo "hosts.sh: unknown command $cmd" >&2; exit 2 ;;
esac
