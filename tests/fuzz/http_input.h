// What the HTTP fuzz targets share: the fuzzer's input served as one
// connection to a cpp-httplib server, through the guard (common/http_guard.h)
// as a socket's bytes are, with the server's answers kept.
#ifndef CMAX_TESTS_FUZZ_HTTP_INPUT_H_
#define CMAX_TESTS_FUZZ_HTTP_INPUT_H_

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/http_guard.h"

namespace cmax::fuzz {

// Exposes the request loop of cpp-httplib's server for one stream.
class FuzzServer : public httplib::Server {
 public:
  bool Serve(httplib::Stream& s, bool last) {
    bool closed = false;
    return process_request(s, last, closed, nullptr) && !closed;
  }
};

// The input as a connection from 127.0.0.1: reads pass the guard, writes
// are kept (the first MiB).
class InputStream : public httplib::Stream {
 public:
  InputStream(const uint8_t* data, size_t size, const HttpLimits& limits)
      : data_(reinterpret_cast<const char*>(data)), size_(size), guard_(limits) {}

  bool is_readable() const override { return pos_ < size_ && !guard_.refused(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (guard_.refused() || pos_ >= size_) return guard_.refused() ? -1 : 0;
    const size_t want = std::min(size, size_ - pos_);
    const size_t ok = guard_.Admit(absl::string_view(data_ + pos_, want));
    if (ok == 0) return -1;
    std::memcpy(ptr, data_ + pos_, ok);
    pos_ += ok;
    return static_cast<ssize_t>(ok);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (out_.size() < (1u << 20)) out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8470;
  }
  socket_t socket() const override { return -1; }

  bool done() const { return pos_ >= size_ || guard_.refused(); }
  const std::string& out() const { return out_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  HttpHeadGuard guard_;
  std::string out_;
};

// Serves up to `max_requests` requests of the input on `server`; returns
// everything it answered.
inline std::string ServeInput(FuzzServer& server, const uint8_t* data, size_t size,
                              int max_requests) {
  const HttpLimits limits;
  InputStream stream(data, size, limits);
  for (int i = 0; i < max_requests && !stream.done(); ++i) {
    if (!server.Serve(stream, i == max_requests - 1)) break;
  }
  return stream.out();
}

}  // namespace cmax::fuzz

#endif  // CMAX_TESTS_FUZZ_HTTP_INPUT_H_
