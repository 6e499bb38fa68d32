// Helpers of the tests of the GPU suite libraries (cmax_<suite>_cuda): run a
// suite's entry point (RunCudaGemm, ...) in a forked child with stdout and
// stderr captured, linked into the test itself (no cmax-bench-cuda), and ask
// in a child whether a GPU is usable. The parent never initialises CUDA: a
// process that forks after CUDA is initialised cannot use it in the child.
#ifndef CMAX_TESTS_BENCHMARKS_CUDA_LIB_RUN_H_
#define CMAX_TESTS_BENCHMARKS_CUDA_LIB_RUN_H_

#include <cuda_runtime.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/benchmarks/suite_run.h"

namespace cmax::testing {

struct LibRun {
  int exit_code = -1;
  std::string out, err;
  std::vector<v1::Record> records;  // of `out` when it is JSON lines
};

inline std::string ReadWhole(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs fn({"<suite>", args...}) in a child bounded by `limit_s` seconds (SIGALRM).
// A child that does not exit normally fails the test.
inline LibRun RunSuiteFn(int (*fn)(int, char**), const std::vector<std::string>& argv_in,
                         unsigned limit_s = 120, bool parse_records = true) {
  char dir_tmpl[] = "/tmp/cmax-librun-XXXXXX";
  REQUIRE(mkdtemp(dir_tmpl) != nullptr);
  const std::string dir = dir_tmpl, out_path = dir + "/out", err_path = dir + "/err";
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(limit_s);
    if (!std::freopen(out_path.c_str(), "w", stdout)) _exit(120);
    if (!std::freopen(err_path.c_str(), "w", stderr)) _exit(121);
    std::vector<std::string> args = argv_in;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = fn(static_cast<int>(args.size()), argv.data());
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  LibRun r;
  r.out = ReadWhole(out_path);
  r.err = ReadWhole(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir.c_str());
  INFO("stderr: " << r.err);
  INFO("signal: " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  REQUIRE(WIFEXITED(status));
  r.exit_code = WEXITSTATUS(status);
  if (parse_records) r.records = ParseRecords(r.out);
  return r;
}

// How many GPUs the CUDA runtime sees, asked in a child. 0 with `why` set.
inline int UsableGpusInChild(std::string* why) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    std::string msg = e == cudaSuccess
                          ? (n == 0 ? std::string("no device") : std::string())
                          : std::string(cudaGetErrorName(e));
    std::string line = std::to_string(e == cudaSuccess ? n : 0) + " " + msg;
    (void)!write(fds[1], line.data(), line.size());
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[256];
  ssize_t k;
  while ((k = read(fds[0], buf, sizeof(buf))) > 0)
    got.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  size_t sp = got.find(' ');
  int n = sp == std::string::npos ? 0 : std::atoi(got.substr(0, sp).c_str());
  *why = sp == std::string::npos ? "the probe child wrote nothing" : got.substr(sp + 1);
  return n;
}

// Checks the no-GPU path: exit 2, no Measurement, a finding that says why.
inline void CheckNotMeasured(const LibRun& r) {
  CHECK(r.exit_code == 2);
  bool said_why = false;
  for (const auto& rec : r.records) {
    CHECK_FALSE(rec.has_measurement());
    if (rec.has_finding()) {
      INFO(rec.finding().title() << " / " << rec.finding().detail());
      CHECK_FALSE(rec.finding().detail().empty());
      if (rec.finding().title().find("not measured") != std::string::npos ||
          rec.finding().check_id() == "gpu.driver_too_old") {
        said_why = true;
      }
    }
  }
  CHECK(said_why);
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_CUDA_LIB_RUN_H_
