#include "coordinator/registry.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"

namespace cmax::coordinator {

const char* AgentStateName(AgentState state) {
  switch (state) {
    case AgentState::kConnected: return "connected";
    case AgentState::kDisconnected: return "disconnected";
    case AgentState::kLost: return "lost";
  }
  return "unknown";
}

bool IsValidNodeName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

AgentSession* Registry::OnHello(const v1::Hello& hello, AgentSession* session, int64_t now_ns,
                                int64_t now_unix_ns) {
  AgentEntry& e = agents_[hello.node_name()];
  AgentSession* replaced = nullptr;
  if (e.session && e.session != session) {
    replaced = e.session;
    by_session_.erase(replaced);
  }
  e.node = hello.node_name();
  e.state = AgentState::kConnected;
  e.session = session;
  e.inventory = hello.inventory();
  e.addresses.assign(hello.addresses().begin(), hello.addresses().end());
  if (e.boot_id != hello.boot_id()) {
    e.rtt_ns = -1;  // a new agent process: start the clock estimate afresh
    e.pong_count = 0;
  }
  e.boot_id = hello.boot_id();
  e.last_heard_ns = now_ns;
  e.last_heard_unix_ns = now_unix_ns;
  e.state_since_ns = now_ns;
  by_session_[session] = e.node;
  return replaced;
}

void Registry::OnHeard(AgentSession* session, int64_t now_ns, int64_t now_unix_ns) {
  auto it = by_session_.find(session);
  if (it == by_session_.end()) return;
  AgentEntry& e = agents_[it->second];
  e.last_heard_ns = now_ns;
  e.last_heard_unix_ns = now_unix_ns;
}

void Registry::OnPong(AgentSession* session, const v1::Pong& pong, int64_t t4) {
  auto it = by_session_.find(session);
  if (it == by_session_.end()) return;
  AgentEntry& e = agents_[it->second];
  const double t1 = static_cast<double>(pong.t1_ns());
  const double t2 = static_cast<double>(pong.t2_ns());
  const double t3 = static_cast<double>(pong.t3_ns());
  const double t4d = static_cast<double>(t4);
  double rtt = (t4d - t1) - (t3 - t2);
  if (rtt < 0) rtt = 0;
  double offset = ((t2 - t1) + (t3 - t4d)) / 2;
  ++e.pong_count;
  // Keep the offset of the sample with the least round trip (least queuing
  // error). The best round trip ages 5 % a sample, so a path that became
  // slower for good, or a drifting clock, is followed within a few dozen
  // samples, while one slow sample (a stream stalled for seconds, whose
  // offset is off by up to half its round trip) never replaces a good one.
  if (e.rtt_ns >= 0) e.rtt_ns = e.rtt_ns * 1.05 + 1000;
  if (e.rtt_ns < 0 || rtt <= e.rtt_ns * 1.5) {
    e.offset_ns = offset;
    e.rtt_ns = e.rtt_ns < 0 ? rtt : std::min(rtt, e.rtt_ns);
  }
}

std::string Registry::OnStreamEnded(AgentSession* session, int64_t now_ns) {
  auto it = by_session_.find(session);
  if (it == by_session_.end()) return "";
  std::string node = it->second;
  by_session_.erase(it);
  AgentEntry& e = agents_[node];
  if (e.session == session) {
    e.session = nullptr;
    if (e.state == AgentState::kConnected) {
      e.state = AgentState::kDisconnected;
      e.state_since_ns = now_ns;
    }
  }
  return node;
}

std::vector<std::string> Registry::ExpireSilent(int64_t now_ns) {
  std::vector<std::string> lost;
  for (auto& [node, e] : agents_) {
    if (e.state == AgentState::kLost) continue;
    const bool connected = e.state == AgentState::kConnected;
    int64_t since = connected ? e.last_heard_ns : e.state_since_ns;
    if (connected && e.session) since = std::max(since, e.session->last_receive_mono_ns());
    const int64_t limit = connected ? timeout_ns_ : std::max(timeout_ns_, kMinReconnectGraceNs);
    if (now_ns - since > limit) {
      e.state = AgentState::kLost;
      e.state_since_ns = now_ns;
      lost.push_back(node);
    }
  }
  return lost;
}

void Registry::AddRemembered(const std::string& node, const v1::Inventory& inventory,
                             int64_t now_ns) {
  if (agents_.count(node)) return;
  AgentEntry& e = agents_[node];
  e.node = node;
  e.inventory = inventory;
  e.state = AgentState::kDisconnected;
  e.state_since_ns = now_ns;
}

const AgentEntry* Registry::Find(const std::string& node) const {
  auto it = agents_.find(node);
  return it == agents_.end() ? nullptr : &it->second;
}

std::string Registry::NodeOf(AgentSession* session) const {
  auto it = by_session_.find(session);
  return it == by_session_.end() ? "" : it->second;
}

bool Registry::IsConnected(const std::string& node) const {
  const AgentEntry* e = Find(node);
  return e && e->state == AgentState::kConnected && e->session;
}

std::vector<const AgentEntry*> Registry::All() const {
  std::vector<const AgentEntry*> out;
  for (const auto& [node, e] : agents_) out.push_back(&e);
  return out;
}

std::vector<std::string> Registry::ConnectedNodes() const {
  std::vector<std::string> out;
  for (const auto& [node, e] : agents_) {
    if (e.state == AgentState::kConnected && e.session) out.push_back(node);
  }
  return out;
}

std::vector<std::string> Registry::NextToPing(size_t n) {
  std::vector<std::string> out;
  if (n == 0 || agents_.empty()) return out;
  auto it = agents_.upper_bound(ping_cursor_);
  // At most one full turn: each node once per call.
  for (size_t seen = 0; seen < agents_.size() && out.size() < n; ++seen, ++it) {
    if (it == agents_.end()) it = agents_.begin();
    if (it->second.state == AgentState::kConnected && it->second.session) {
      out.push_back(it->first);
    }
    ping_cursor_ = it->first;
  }
  return out;
}

size_t Registry::ConnectedCount() const {
  size_t n = 0;
  for (const auto& [node, e] : agents_) n += e.state == AgentState::kConnected && e.session;
  return n;
}

int64_t Registry::ToAgentClock(const std::string& node, int64_t unix_ns) const {
  const AgentEntry* e = Find(node);
  if (!e || e->rtt_ns < 0) return unix_ns;
  return unix_ns + static_cast<int64_t>(std::llround(e->offset_ns));
}

}  // namespace cmax::coordinator
