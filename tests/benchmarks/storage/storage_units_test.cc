// Unit tests of the storage suite's pieces against real fio 3.33 output and a
// mountinfo fixture (tests/fixtures/storage/NOTE.md).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "benchmarks/storage/fio_job.h"
#include "benchmarks/storage/fio_result.h"
#include "benchmarks/storage/fs_probe.h"
#include "benchmarks/storage/run_helpers.h"
#include "benchmarks/storage/work_dir.h"

namespace st = cmax::storage;

namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/storage/" + name);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempDir() {
  char dir[] = "/tmp/cmax-storage-unit-XXXXXX";
  REQUIRE(mkdtemp(dir));
  return dir;
}

}  // namespace

TEST_CASE("fio JSON: per-job bandwidth, IOPS and ordered latency percentiles", "[storage]") {
  auto r = st::ParseFioJson(Fixture("fio-3.33-write-verify-2jobs.json"));
  REQUIRE(r.ok());
  CHECK(r->version == "fio-3.33");
  CHECK(r->timestamp_ms > 1700000000000LL);
  REQUIRE(r->jobs.size() == 2);
  for (const auto& j : r->jobs) {
    CHECK(j.name == "data");
    CHECK(j.error == 0);
    CHECK(j.write.io_bytes == 8 << 20);
    CHECK(j.write.bw_bytes > 0);
    CHECK(j.write.iops > 0);
    REQUIRE(j.write.have_percentiles);
    CHECK(j.write.latency_kind == "lat");
    CHECK(j.write.p50_us > 0);
    CHECK(j.write.p50_us <= j.write.p99_us);
    CHECK(j.write.p99_us <= j.write.p99_9_us);
    // do_verify=1 read every block back.
    CHECK(j.read.io_bytes == 8 << 20);
    // bw_bytes is io_bytes over the runtime (fio's own definition).
    CHECK(j.write.bw_bytes ==
          Approx(j.write.io_bytes / (j.write.runtime_ms / 1e3)).epsilon(0.02));
  }
}

TEST_CASE("fio JSON after an error line, and the verify failure on stderr", "[storage]") {
  auto r = st::ParseFioJson(Fixture("fio-3.33-verify-failed.stdout"));
  REQUIRE(r.ok());
  REQUIRE(r->jobs.size() == 2);
  CHECK(r->jobs[1].error == 84);
  auto bad = st::ParseVerifyErrors(Fixture("fio-3.33-verify-failed.stderr"));
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].file == "/tmp/fx/data.1.0");
  CHECK(bad[0].offset == 393216);
  CHECK(absl::StrContains(bad[0].line, "verify failed"));
  CHECK_FALSE(st::ParseFioJson("fio: engine io_uring not loadable\n").ok());
  CHECK(st::ParseVerifyErrors("fio: some other error\n").empty());
}

TEST_CASE("bandwidth logs of two jobs sum per second", "[storage]") {
  auto s = st::SumBwLogs({Fixture("fio-3.33-bw.1.log"), Fixture("fio-3.33-bw.2.log")});
  REQUIRE(s.ok());
  CHECK(s->step_ms == 1000);
  CHECK(s->start_unix_ms == 1795987924000LL);
  REQUIRE(s->mbps.size() == 3);
  CHECK(s->mbps[0] == Approx((823296.0 + 787456.0) * 1024 / 1e6));
  CHECK(s->mbps[2] == Approx((833536.0 + 864256.0) * 1024 / 1e6));
  auto round = st::ParseSeries(st::FormatSeries(s->mbps));
  REQUIRE(round.ok());
  CHECK((*round)[1] == Approx(s->mbps[1]).margin(0.05));
  CHECK_FALSE(st::SumBwLogs({""}).ok());
  CHECK_FALSE(st::ParseSeries("1,x").ok());
}

TEST_CASE("mountinfo: longest mount point prefix, escapes, local and shared", "[storage]") {
  std::string mi = Fixture("mountinfo");
  auto m = st::FindMount(mi, "/data/lustre/run1");
  REQUIRE(m.ok());
  CHECK(m->fs_type == "lustre");
  CHECK(m->source == "10.0.0.9@o2ib:/fs1");
  CHECK(st::StorageClass(m->fs_type, m->source) == "shared");
  m = st::FindMount(mi, "/data/x");
  REQUIRE(m.ok());
  CHECK(m->fs_type == "nfs4");
  m = st::FindMount(mi, "/database");  // not under /data
  REQUIRE(m.ok());
  CHECK(m->mount_point == "/");
  CHECK(st::StorageClass(m->fs_type, m->source) == "local");
  m = st::FindMount(mi, "/mnt/my disk/ckpt");
  REQUIRE(m.ok());
  CHECK(m->fs_type == "fuse.juicefs");
  CHECK(st::StorageClass(m->fs_type, m->source) == "shared");
  m = st::FindMount(mi, "/scratch");
  REQUIRE(m.ok());
  CHECK(st::StorageClass(m->fs_type, m->source) == "local");
  m = st::FindMount(mi, "/vast/ds1");
  REQUIRE(m.ok());
  CHECK(st::StorageClass(m->fs_type, m->source) == "shared");
  CHECK(st::StorageClass("wekafs", "default") == "shared");
  CHECK(st::StorageClass("tmpfs", "tmpfs") == "local");
  CHECK(st::StorageClass("squashfs", "/dev/loop0") == "unknown");
  CHECK_FALSE(st::FindMount(mi, "relative").ok());
  CHECK(st::FsTypeFromMagic(0xEF53) == "ext2/3/4");
  CHECK(st::FsTypeFromMagic(0x0BD00BD0) == "lustre");
  CHECK(st::FsTypeFromMagic(0x12345678) == "0x12345678");
}

TEST_CASE("the real /tmp has a mount, free space and a statfs type", "[storage]") {
  auto m = st::MountOf(cmax::Sysroot("/"), "/tmp");
  REQUIRE(m.ok());
  CHECK_FALSE(m->fs_type.empty());
  auto free_bytes = st::FreeBytes("/tmp");
  REQUIRE(free_bytes.ok());
  CHECK(*free_bytes > 0);
  std::string why;
  std::string engine = st::ProbeIoEngine(&why);
  CHECK((engine == "io_uring" || engine == "psync"));
  CHECK_FALSE(why.empty());
}

TEST_CASE("job files carry the honest-data options", "[storage]") {
  st::JobSpec spec;
  spec.pattern = "rand-read";
  spec.dir = "/x/cmax-storage-n-1/data";
  spec.size_bytes = 64 << 20;
  spec.jobs = 3;
  spec.queue_depth = 32;
  spec.duration_s = 5;
  spec.bw_log = true;
  spec.bw_log_prefix = "rand-read";
  std::string layout = st::LayoutJobFile(spec);
  std::string job = st::MeasuredJobFile(spec);
  for (const std::string& f : {layout, job}) {
    CHECK(absl::StrContains(f, "refill_buffers=1\n"));
    CHECK(absl::StrContains(f, "buffer_compress_percentage=0\n"));
    CHECK(absl::StrContains(f, "randrepeat=0\n"));
    CHECK(absl::StrContains(f, "fallocate=none\n"));
    CHECK(absl::StrContains(f, "direct=1\n"));
    CHECK(absl::StrContains(f, "numjobs=3\n"));
    CHECK(absl::StrContains(f, "[data]\n"));  // same files in both
  }
  CHECK(absl::StrContains(layout, "rw=write\n"));
  CHECK(absl::StrContains(job, "rw=randread\n"));
  CHECK(absl::StrContains(job, "bs=4096\n"));
  CHECK(absl::StrContains(job, "iodepth=32\n"));
  CHECK(absl::StrContains(job, "time_based=1\nruntime=5\n"));
  CHECK(absl::StrContains(job, "log_unix_epoch=1\n"));
  spec.engine = "psync";
  CHECK(absl::StrContains(st::MeasuredJobFile(spec), "iodepth=1\n"));

  spec.verify = true;
  job = st::MeasuredJobFile(spec);
  CHECK(absl::StrContains(job, "verify=crc32c\nverify_fatal=1\n"));
  CHECK(absl::StrContains(job, "do_verify=1\n"));
  CHECK_FALSE(absl::StrContains(job, "time_based"));  // one pass over every block
  CHECK(absl::StrContains(st::LayoutJobFile(spec), "bs=4096\n"));  // headers match the reads

  spec.pattern = "checkpoint";
  spec.verify = false;
  job = st::MeasuredJobFile(spec);
  CHECK(absl::StrContains(job, "[shard]\nrw=write\n"));
  CHECK(absl::StrContains(job, "end_fsync=1\n"));
  CHECK(absl::StrContains(job, "bs=4194304\n"));

  spec.pattern = "metadata";
  spec.metadata_dirs = {"/m/0", "/m/1", "/m/2"};
  job = st::MeasuredJobFile(spec);
  CHECK(absl::StrContains(job, "directory=/m/0:/m/1:/m/2\n"));
  CHECK(absl::StrContains(job, "ioengine=filecreate"));
  CHECK(absl::StrContains(job, "ioengine=filestat"));
  CHECK(absl::StrContains(job, "ioengine=filedelete"));
}

TEST_CASE("work directories: names, checks, removal without following links", "[storage]") {
  CHECK(st::NodeOfWorkDir("cmax-storage-node-3-1234") == "node-3");
  CHECK(st::NodeOfWorkDir("/p/cmax-storage-a.b-7") == "a.b");
  CHECK(st::NodeOfWorkDir("cmax-storage-x-12ab").empty());
  CHECK(st::NodeOfWorkDir("other-x-12").empty());

  std::string base = TempDir();
  std::string outside = TempDir();
  std::string victim = outside + "/keep-me";
  std::ofstream(victim) << "precious";
  auto work = st::CreateWorkDir(base, "node/../evil");
  REQUIRE(work.ok());
  CHECK(work->rfind(base + "/cmax-storage-node_.._evil-", 0) == 0);
  REQUIRE(mkdir((*work + "/data").c_str(), 0700) == 0);
  REQUIRE(symlink(victim.c_str(), (*work + "/data/data.0.0").c_str()) == 0);
  REQUIRE(symlink(outside.c_str(), (*work + "/linkdir").c_str()) == 0);
  auto s = st::CheckNoSymlinks(*work);
  CHECK_FALSE(s.ok());
  CHECK(absl::StrContains(s.message(), "symbolic link"));
  CHECK(st::CheckOwnDir(base, *work).ok());
  CHECK_FALSE(st::CheckOwnDir(base, *work + "/linkdir").ok());
  CHECK_FALSE(st::CheckOwnDir(base, outside).ok());
  REQUIRE(st::RemoveTree(*work).ok());
  struct stat st_buf;
  CHECK(lstat(work->c_str(), &st_buf) != 0);
  std::ifstream in(victim);
  std::string content;
  in >> content;
  CHECK(content == "precious");  // the link's target survived
  CHECK_FALSE(st::ResolveBase("relative/path").ok());
  CHECK_FALSE(st::ResolveBase(base + "/missing").ok());
  st::RemoveTree(base).IgnoreError();
  st::RemoveTree(outside).IgnoreError();
}

TEST_CASE("run helpers: pseudo file systems, byte counts, tails, regular file sizes", "[storage]") {
  CHECK(st::IsPseudoFs("proc"));
  CHECK(st::IsPseudoFs("cgroup2"));
  CHECK_FALSE(st::IsPseudoFs("ext4"));
  CHECK_FALSE(st::IsPseudoFs("tmpfs"));  // tmpfs holds files: measured as local
  CHECK(st::HumanBytes(512) == "512.0 B");
  CHECK(st::HumanBytes(1536) == "1.5 KiB");
  CHECK(st::HumanBytes(double(int64_t{1} << 30)) == "1.0 GiB");
  CHECK(st::Tail("abcdef", 3) == "def");
  CHECK(st::Tail("ab", 3) == "ab");

  std::string dir = TempDir();
  std::ofstream(dir + "/f") << "12345";
  REQUIRE(symlink((dir + "/f").c_str(), (dir + "/link").c_str()) == 0);
  int64_t size = -1;
  CHECK(st::FileSize(dir + "/f", &size));
  CHECK(size == 5);
  CHECK_FALSE(st::FileSize(dir + "/link", &size));  // a link is not a regular file
  CHECK_FALSE(st::FileSize(dir + "/missing", &size));
  CHECK_FALSE(st::FileSize(dir, &size));

  cmax::v1::Finding f = st::MakeFinding("storage.x", cmax::v1::SEVERITY_WARN, "path:/p", "t", "d");
  CHECK(f.category() == "storage");
  CHECK(f.check_id() == "storage.x");
  CHECK(f.severity() == cmax::v1::SEVERITY_WARN);
  st::RemoveTree(dir).IgnoreError();
}
