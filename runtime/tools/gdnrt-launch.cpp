//===- gdnrt-launch.cpp - start P ranks of a standalone gdnrt program -----===//
//
//   gdnrt-launch -n P [--rendezvous tcp|file|<spec>] [--timeout SECONDS]
//                [--] program [args...]
//
// Starts P copies of the program with GDNRT_RANK, GDNRT_LOCAL_RANK,
// GDNRT_WORLD_SIZE and GDNRT_RENDEZVOUS set (gdnrt_comm_from_environment
// reads them). The default rendezvous is a fresh file in a private temporary
// directory; `tcp` picks a free loopback port. If a rank fails, the others
// are stopped (SIGTERM, then SIGKILL after a grace period) so a job never
// waits forever on a dead peer; the launcher exits with the first failing
// rank's status (124 on its own timeout).
//
//===----------------------------------------------------------------------===//

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void usage(const std::string &problem) {
  std::fprintf(stderr,
               "gdnrt-launch: %s\n"
               "usage: gdnrt-launch -n RANKS [--rendezvous tcp|file|SPEC] "
               "[--timeout SECONDS] [--] PROGRAM [ARGS...]\n",
               problem.c_str());
  std::exit(2);
}

/// A loopback port that was free a moment ago (the kernel picks it).
int freeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
    std::perror("gdnrt-launch: cannot find a free loopback port");
    std::exit(1);
  }
  close(fd);
  return ntohs(address.sin_port);
}

struct Options {
  int ranks = 0;
  std::string rendezvous = "file";
  double timeoutSeconds = 0; // 0: none
  std::vector<char *> command;
};

Options parse(int argc, char **argv) {
  Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-n" || arg == "--ranks") {
      std::string text = value();
      char *end = nullptr;
      long ranks = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end || ranks < 1 || ranks > 4096)
        usage("the rank count \"" + text + "\" is not an integer in 1..4096");
      options.ranks = static_cast<int>(ranks);
    } else if (arg == "--rendezvous") {
      options.rendezvous = value();
    } else if (arg == "--timeout") {
      std::string text = value();
      char *end = nullptr;
      options.timeoutSeconds = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || options.timeoutSeconds <= 0)
        usage("the timeout \"" + text + "\" is not a positive number of seconds");
    } else if (arg == "--") {
      ++i;
      break;
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown option " + arg);
    } else {
      break;
    }
  }
  if (options.ranks == 0)
    usage("say how many ranks to start with -n");
  for (; i < argc; ++i)
    options.command.push_back(argv[i]);
  if (options.command.empty())
    usage("no program to start");
  options.command.push_back(nullptr);
  return options;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

int exitCodeOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  std::string directory;
  std::string rendezvous = options.rendezvous;
  if (rendezvous == "file") {
    char pattern[] = "/tmp/gdnrt-launch-XXXXXX";
    if (!mkdtemp(pattern)) {
      std::perror("gdnrt-launch: mkdtemp");
      return 1;
    }
    directory = pattern;
    rendezvous = "file:" + directory + "/nccl-id";
  } else if (rendezvous == "tcp") {
    rendezvous = "tcp:127.0.0.1:" + std::to_string(freeLoopbackPort());
  }

  std::vector<pid_t> children(options.ranks, -1);
  for (int rank = 0; rank < options.ranks; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("gdnrt-launch: fork");
      for (pid_t child : children)
        if (child > 0)
          kill(child, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      setenv("GDNRT_RANK", std::to_string(rank).c_str(), 1);
      setenv("GDNRT_LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("GDNRT_WORLD_SIZE", std::to_string(options.ranks).c_str(), 1);
      setenv("GDNRT_RENDEZVOUS", rendezvous.c_str(), 1);
      execvp(options.command[0], options.command.data());
      std::fprintf(stderr, "gdnrt-launch: rank %d cannot start %s: %s\n", rank,
                   options.command[0], std::strerror(errno));
      _exit(127);
    }
    children[rank] = pid;
  }

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int running = options.ranks, result = 0;
  bool stopping = false;
  Clock::time_point killAt{};
  auto stopOthers = [&](const std::string &why) {
    if (stopping)
      return;
    stopping = true;
    std::fprintf(stderr, "gdnrt-launch: %s; stopping the other ranks\n",
                 why.c_str());
    for (pid_t child : children)
      if (child > 0)
        kill(child, SIGTERM);
    killAt = Clock::now() + std::chrono::seconds(5);
  };
  while (running > 0) {
    int status = 0;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      for (int rank = 0; rank < options.ranks; ++rank)
        if (children[rank] == done) {
          children[rank] = -1;
          --running;
          if (status != 0 && !stopping) {
            result = exitCodeOf(status);
            stopOthers("rank " + std::to_string(rank) + " " +
                       describeStatus(status));
          }
        }
      continue;
    }
    if (options.timeoutSeconds > 0 && !stopping &&
        Clock::now() - start >
            std::chrono::duration<double>(options.timeoutSeconds)) {
      result = 124;
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", options.timeoutSeconds);
      stopOthers(std::string("the job ran past its ") + seconds +
                 " s timeout");
    }
    if (stopping && Clock::now() > killAt)
      for (pid_t child : children)
        if (child > 0)
          kill(child, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!directory.empty()) {
    std::remove((directory + "/nccl-id").c_str());
    rmdir(directory.c_str());
  }
  return result;
}
