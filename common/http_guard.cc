#include "common/http_guard.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cmax {
namespace {

absl::string_view StatusText(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// Methods whose requests carry a body (RFC 9110 9.3): one without a length
// would make the parser read until the peer closes.
bool MethodTakesBody(absl::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH";
}

}  // namespace

std::string HttpRefusalResponse(int status, absl::string_view reason) {
  const std::string body = absl::StrCat(status, " ", reason, "\n");
  return absl::StrCat("HTTP/1.1 ", status, " ", StatusText(status),
                      "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ",
                      body.size(), "\r\nConnection: close\r\n\r\n", body);
}

void HttpHeadGuard::Refuse(int status, std::string reason) {
  refusal_.status = status;
  refusal_.reason = std::move(reason);
}

size_t HttpHeadGuard::Admit(absl::string_view bytes) {
  size_t admitted = 0;
  while (admitted < bytes.size() && !refused()) {
    if (state_ == State::kBody) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(body_left_, bytes.size() - admitted));
      admitted += n;
      body_left_ -= n;
      if (body_left_ == 0) state_ = State::kHead;
      continue;
    }
    const char c = bytes[admitted];
    if (head_.size() >= limits_.max_head_bytes) {
      Refuse(431, absl::StrCat("the request head is longer than ", limits_.max_head_bytes,
                               " bytes"));
      break;
    }
    head_.push_back(c);
    if (c == '\n') {
      ++lines_;
      const bool blank = head_.size() >= 2 && lines_ > 1 &&
                         head_.compare(head_.size() - 2, 2, "\r\n") == 0 &&
                         (head_.size() == 2 || head_[head_.size() - 3] == '\n');
      if (blank) {
        CheckHead();  // may refuse: then this last byte is not passed on
        if (refused()) break;
        head_.clear();
        lines_ = 0;
        if (body_left_ > 0) state_ = State::kBody;
      } else if (lines_ >= limits_.max_head_lines) {
        Refuse(431, absl::StrCat("the request head has more than ", limits_.max_head_lines,
                                 " lines"));
        break;
      }
    }
    ++admitted;
  }
  return admitted;
}

void HttpHeadGuard::CheckHead() {
  std::vector<absl::string_view> lines = absl::StrSplit(head_, '\n');
  absl::string_view request_line = absl::StripTrailingAsciiWhitespace(lines.front());
  const absl::string_view method = request_line.substr(0, request_line.find(' '));
  bool has_length = false;
  uint64_t length = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    absl::string_view line = lines[i];
    if (!absl::ConsumeSuffix(&line, "\r")) continue;  // skipped by the parser too
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      Refuse(411, "a request body is accepted with a Content-Length only, never "
                  "Transfer-Encoding");
      return;
    }
    if (!absl::EqualsIgnoreCase(name, "Content-Length")) continue;
    uint64_t n = 0;
    const bool digits = !value.empty() && value.size() <= 19 &&
                        value.find_first_not_of("0123456789") == absl::string_view::npos &&
                        absl::SimpleAtoi(value, &n);
    if (!digits || (has_length && n != length)) {
      Refuse(400, "the Content-Length is not one decimal number");
      return;
    }
    has_length = true;
    length = n;
  }
  if (!has_length && MethodTakesBody(method)) {
    Refuse(411, absl::StrCat("a ", method, " needs a Content-Length"));
    return;
  }
  if (length > limits_.max_body_bytes) {
    Refuse(413, absl::StrCat("a request body is at most ", limits_.max_body_bytes, " bytes"));
    return;
  }
  body_left_ = length;
}

}  // namespace cmax
