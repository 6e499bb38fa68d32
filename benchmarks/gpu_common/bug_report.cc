#include "benchmarks/gpu_common/bug_report.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace cmax::bench {
namespace {

constexpr size_t kStderrTailBytes = 2000;

std::optional<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

// The node name as a file name: anything but [A-Za-z0-9._-] becomes '_', so
// a name from the environment can never climb out of the directory.
std::string SafeName(const std::string& name) {
  std::string out = name.empty() ? "node" : name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out == "." || out == "..") out = "_";
  return out;
}

}  // namespace

std::string BugReportDir(const std::string& flag_dir, const std::string& task_dir,
                         const std::string& node, int64_t unix_s) {
  if (!flag_dir.empty()) return flag_dir;
  const std::string leaf = absl::StrCat(SafeName(node), "-", unix_s);
  if (!task_dir.empty()) {
    std::filesystem::path task(std::string(absl::StripSuffix(task_dir, "/")));
    if (task.parent_path().filename() == "tasks") {
      return (task.parent_path().parent_path() / "artifacts" / leaf).string();
    }
  }
  return absl::StrCat("/var/lib/cmax/artifacts/", leaf);
}

std::vector<std::string> BugReportArgv(const std::string& tool,
                                       const std::string& output_base) {
  return {tool, "--output-file", output_base};
}

BugReportOutcome CollectBugReport(const BugReportRequest& request) {
  BugReportOutcome o;
  o.node = request.node;
  const std::string base =
      absl::StrCat(request.dir, "/nvidia-bug-report-", SafeName(request.node), ".log");
  const std::vector<std::string> argv = BugReportArgv(request.tool, base);
  o.command = absl::StrJoin(argv, " ");
  std::error_code ec;
  std::filesystem::create_directories(request.dir, ec);
  if (ec) {
    o.error = absl::StrCat("create ", request.dir, ": ", ec.message());
    return o;
  }
  auto run = RunCommand(argv, request.timeout);
  if (!run.ok()) {
    o.error = std::string(run.status().message());
    return o;
  }
  o.started = true;
  o.exit = run->exit;
  o.timed_out = run->timed_out;
  const bool exited_ok = o.exit.exited && o.exit.code == 0 && !o.timed_out;
  if (!exited_ok) {
    const std::string& err = run->err;
    o.stderr_tail =
        err.size() > kStderrTailBytes ? err.substr(err.size() - kStderrTailBytes) : err;
  }
  for (const std::string& candidate : {base + ".gz", base}) {
    if (auto size = FileSize(candidate)) {
      o.file = candidate;
      o.size = *size;
      break;
    }
  }
  if (o.file.empty()) {
    o.error = absl::StrCat("no report written (looked for ", base, ".gz)");
    return o;
  }
  if (auto sha = Sha256OfFile(o.file); sha.ok()) {
    o.sha256 = *sha;
  } else {
    o.error = std::string(sha.status().message());
  }
  return o;
}

std::string BugReportArtifactText(const BugReportOutcome& o) {
  std::string text = absl::StrCat("node: ", o.node, "\ncommand: ", o.command, "\n");
  if (o.started) {
    absl::StrAppend(&text, "exit: ", o.exit.Describe(), o.timed_out ? " (timed out)" : "",
                    "\n");
  }
  if (!o.file.empty()) {
    absl::StrAppend(&text, "file: ", o.file, "\nsize_bytes: ", o.size, "\n");
    if (!o.sha256.empty()) absl::StrAppend(&text, "sha256: ", o.sha256, "\n");
  }
  if (!o.error.empty()) absl::StrAppend(&text, "error: ", o.error, "\n");
  if (!o.stderr_tail.empty())
    absl::StrAppend(&text, "-- stderr (tail) --\n", o.stderr_tail, "\n");
  return text;
}

void WriteBugReportRecords(const BugReportOutcome& o, RecordWriter* out) {
  out->Artifact("nvidia_bug_report.txt", "text/plain", BugReportArtifactText(o));
  if (o.ok()) {
    out->Log("info",
             absl::StrCat("nvidia-bug-report written on node ", o.node, ": ", o.file,
                          " (", o.size, " bytes, sha256 ", o.sha256, ")"));
  } else {
    out->Log("warn",
             absl::StrCat("nvidia-bug-report on node ", o.node,
                          " did not complete: ", o.started ? o.exit.Describe() : o.error,
                          o.timed_out ? " (timed out)" : "",
                          o.file.empty() ? "" : absl::StrCat("; partial file ", o.file)));
  }
}

bool MaybeCollectBugReport(bool enabled, bool any_failed, BugReportRequest request,
                           RecordWriter* out) {
  if (!enabled || !any_failed) return false;
  if (request.tool.empty()) request.tool = FindExecutable(kBugReportTool);
  if (request.tool.empty()) {
    out->Log("info", absl::StrCat(kBugReportTool, " not found: not collected"));
    return false;
  }
  WriteBugReportRecords(CollectBugReport(request), out);
  return true;
}

absl::StatusOr<std::string> Sha256OfFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return absl::NotFoundError(absl::StrCat("open ", path));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(),
                                                         &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("SHA-256: EVP_DigestInit_ex failed");
  }
  std::vector<unsigned char> buf(1 << 16);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    if (EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) {
      return absl::InternalError("SHA-256: EVP_DigestUpdate failed");
    }
  }
  if (std::ferror(f.get())) return absl::InternalError(absl::StrCat("read ", path));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) {
    return absl::InternalError("SHA-256: EVP_DigestFinal_ex failed");
  }
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) absl::StrAppendFormat(&hex, "%02x", md[i]);
  return hex;
}

}  // namespace cmax::bench
