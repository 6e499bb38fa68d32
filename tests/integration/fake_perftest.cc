// A stand-in for perftest's ib_write_bw, ib_read_bw and ib_write_lat in the
// rdma integration test (tests/integration/rdma_test.cc), installed under
// those names on the agents' PATH. It checks its argv the way the rdma suite
// must build it (-d <hca> -i <port> -F -p <tcp port>, --report_gbits for the
// bandwidth tests, a server address last on the client), and does what
// perftest's out-of-band exchange does over TCP: the server listens on -p
// and waits for one client, the client connects to <server>:<port> (which
// it only knows from the rendezvous) and both exchange one line. Then each
// prints perftest's report table (the shape of tests/fixtures/rdma/*).
//
// Environment:
//   FAKE_PERFTEST_LOG   append "<program> server|client <argv...>" here
//   FAKE_PERFTEST_SLOW  an HCA name whose client reports 150 Gb/s (else 391.5)
//   FAKE_PERFTEST_FAIL_SERVER  a program name (ib_read_bw) whose server fails
//                       before listening, with the lines the real Debian
//                       perftest 4.5 prints on a host without devices
//   FAKE_PERFTEST_FAIL_CLIENT  a program name whose client fails after the
//                       exchange (the server side ran)
// Exit: 0 done; 1 a bad argument, no peer, or a mismatched peer.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int Fail(const std::string& why) {
  std::fprintf(stderr, "fake perftest: %s\n", why.c_str());
  return 1;
}

bool ReadLine(int fd, std::string* line, int timeout_ms) {
  line->clear();
  char c = 0;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    if (read(fd, &c, 1) != 1) return false;
    if (c == '\n') return true;
    line->push_back(c);
    if (line->size() > 256) return false;
  }
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void PrintReport(const std::string& program, double gbps) {
  std::printf(
      "----------------------------------------------------------------------------------"
      "-----\n");
  if (program == "ib_write_lat") {
    std::printf(
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
        "t_avg[usec]    "
        "t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
    std::printf(
        " 2       1000          1.76           6.12         1.79                1.80     "
        "        "
        "0.06            1.88                    6.12\n");
  } else {
    std::printf(
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
        "MsgRate[Mpps]\n");
    std::printf(" 65536      5000             %.2f             %.2f  \t\t   %.6f\n",
                gbps + 0.4, gbps, gbps * 1e9 / 8 / 65536 / 1e6);
  }
  std::printf(
      "----------------------------------------------------------------------------------"
      "-----\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string program = argv[0];
  if (auto slash = program.rfind('/'); slash != std::string::npos)
    program = program.substr(slash + 1);
  const bool bw = program == "ib_write_bw" || program == "ib_read_bw";
  if (!bw && program != "ib_write_lat") return Fail("called as '" + program + "'");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("Version: 0.0-fake\n");
    return 1;  // perftest 6.06 exits 1 after printing its version
  }
  if (args.size() == 1 && args[0] == "--help") {
    std::printf(
        "Usage:\n  %s            start a server and wait for connection\n"
        "  %s <host>     connect to server at <host>\n\nOptions:\n"
        "  -d, --ib-dev=<dev>  -i, --ib-port=<port>  -p, --port=<port>  -F\n",
        program.c_str(), program.c_str());
    return 0;
  }
  std::string hca, server;
  int ib_port = 0, tcp_port = 0;
  bool big_f = false, gbits = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "-d") {
      if (!value(&hca)) return Fail("-d without a value");
    } else if (a == "-i") {
      if (!value(&v)) return Fail("-i without a value");
      ib_port = std::atoi(v.c_str());
    } else if (a == "-p") {
      if (!value(&v)) return Fail("-p without a value");
      tcp_port = std::atoi(v.c_str());
    } else if (a == "-F") {
      big_f = true;
    } else if (a == "--report_gbits") {
      gbits = true;
    } else if (a == "--perform_warm_up") {
      if (!bw) return Fail("--perform_warm_up given to a latency test");
    } else if (a == "-D" || a == "-n" || a == "-s" || a == "-x") {
      if (!value(&v) || std::atoi(v.c_str()) <= 0)
        return Fail(a + " without a positive value");
      if (a == "-D" && !bw) return Fail("-D given to a latency test");
    } else if (a.rfind("-", 0) == 0) {
      return Fail("unexpected option " + a);
    } else if (i + 1 == args.size()) {
      server = a;
    } else {
      return Fail("unexpected argument " + a);
    }
  }
  if (hca.empty() || ib_port < 1 || tcp_port < 1024 || tcp_port > 65535 || !big_f) {
    return Fail("need -d <hca> -i <port> -F -p <tcp port>");
  }
  if (bw != gbits)
    return Fail(bw ? "bandwidth test without --report_gbits"
                   : "latency test with --report_gbits");
  if (const char* log = std::getenv("FAKE_PERFTEST_LOG"); log && *log) {
    if (FILE* f = std::fopen(log, "a")) {
      std::fprintf(f, "%s %s", program.c_str(), server.empty() ? "server" : "client");
      for (const auto& a : args) std::fprintf(f, " %s", a.c_str());
      std::fprintf(f, "\n");
      std::fclose(f);
    }
  }
  const std::string hello = program + " " + hca + " " + std::to_string(ib_port);
  auto named = [&](const char* var) {
    const char* v = std::getenv(var);
    return v != nullptr && program == v;
  };
  if (server.empty()) {
    if (named("FAKE_PERFTEST_FAIL_SERVER")) {
      std::fprintf(stderr,
                   " Did not detect devices \n If device exists, check if driver is up\n"
                   " Unable to find the Infiniband/RoCE device\n");
      return 1;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(tcp_port));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 1) != 0) {
      return Fail("cannot listen on port " + std::to_string(tcp_port) + ": " +
                  std::strerror(errno));
    }
    std::printf(
        "\n************************************\n* Waiting for client to connect... *\n"
        "************************************\n");
    std::fflush(stdout);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0) return Fail("no client connected within 60 s");
    int c = accept(fd, nullptr, nullptr);
    std::string line;
    if (c < 0 || !ReadLine(c, &line, 10000)) return Fail("no hello from the client");
    // The client must run the same test; its HCA may differ (rail k on each node).
    if (line.rfind(program + " ", 0) != 0) {
      WriteAll(c, "MISMATCH\n");
      return Fail("client runs '" + line + "', this server " + program);
    }
    WriteAll(c, "OK " + hello + "\n");
    close(c);
    close(fd);
    PrintReport(program, 391.5);
    return 0;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(server.c_str(), std::to_string(tcp_port).c_str(), &hints, &res) != 0 ||
      !res) {
    return Fail("cannot resolve " + server);
  }
  int fd = -1;
  for (int attempt = 0; attempt < 50 && fd < 0; ++attempt) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    return Fail("Couldn't connect to " + server + ":" + std::to_string(tcp_port));
  WriteAll(fd, hello + "\n");
  std::string reply;
  if (!ReadLine(fd, &reply, 10000) || reply.rfind("OK ", 0) != 0) {
    return Fail("server answered '" + reply + "'");
  }
  close(fd);
  if (named("FAKE_PERFTEST_FAIL_CLIENT")) {
    return Fail("failed on purpose after the exchange (FAKE_PERFTEST_FAIL_CLIENT)");
  }
  const char* slow = std::getenv("FAKE_PERFTEST_SLOW");
  PrintReport(program, slow && hca == slow ? 150.0 : 391.5);
  return 0;
}
