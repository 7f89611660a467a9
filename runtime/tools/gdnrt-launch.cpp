//===- gdnrt-launch.cpp - start P ranks of a standalone gdnrt program -----===//
//
//   gdnrt-launch -n P [--rendezvous tcp|file|<spec> | --threads]
//                [--timeout SECONDS] [--] program [args...]
//
// Starts P copies of the program with GDNRT_RANK, GDNRT_LOCAL_RANK,
// GDNRT_WORLD_SIZE and GDNRT_RENDEZVOUS set (gdnrt_comm_from_environment
// reads them). The default rendezvous is a fresh file in a private temporary
// directory; `tcp` picks a free loopback port. If a rank fails, the others
// are stopped (SIGTERM, then SIGKILL after a grace period) so a job never
// waits forever on a dead peer; the launcher exits with the first failing
// rank's status (124 on its own timeout).
//
// With --threads it starts one process instead, whose P ranks are threads
// (gdnrt_run_ranks starts them): GDNRT_WORLD_SIZE=P and
// GDNRT_RENDEZVOUS=threads:<a fresh name>, GDNRT_RANK and GDNRT_LOCAL_RANK
// unset. Its exit status is the launcher's.
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
               "usage: gdnrt-launch -n RANKS [--rendezvous tcp|file|SPEC | "
               "--threads] [--timeout SECONDS] [--] PROGRAM [ARGS...]\n",
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
  bool rendezvousGiven = false;
  bool threads = false;      ///< one process, its ranks threads
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
      options.rendezvousGiven = true;
    } else if (arg == "--threads") {
      options.threads = true;
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
  if (options.threads && options.rendezvousGiven)
    usage("--threads runs the ranks as threads of one process, which meet in "
          "memory; it takes no --rendezvous");
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
  if (options.threads) {
    // Fresh per job: the launcher's pid and the clock.
    rendezvous =
        "threads:gdnrt-launch-" + std::to_string(getpid()) + "-" +
        std::to_string(
            std::chrono::steady_clock::now().time_since_epoch().count());
  } else if (rendezvous == "file") {
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
  // One process for --threads; its status stands for all its ranks.
  const int processes = options.threads ? 1 : options.ranks;
  auto nameOf = [&](int process) {
    return options.threads ? std::string("the process of the ranks")
                           : "rank " + std::to_string(process);
  };

  std::vector<pid_t> children(processes, -1);
  for (int rank = 0; rank < processes; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("gdnrt-launch: fork");
      for (pid_t child : children)
        if (child > 0)
          kill(child, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      if (options.threads) {
        // gdnrt_run_ranks numbers the threads; an outer launcher's rank
        // must not leak in.
        unsetenv("GDNRT_RANK");
        unsetenv("GDNRT_LOCAL_RANK");
      } else {
        setenv("GDNRT_RANK", std::to_string(rank).c_str(), 1);
        setenv("GDNRT_LOCAL_RANK", std::to_string(rank).c_str(), 1);
      }
      setenv("GDNRT_WORLD_SIZE", std::to_string(options.ranks).c_str(), 1);
      setenv("GDNRT_RENDEZVOUS", rendezvous.c_str(), 1);
      execvp(options.command[0], options.command.data());
      std::fprintf(stderr, "gdnrt-launch: %s cannot start %s: %s\n",
                   nameOf(rank).c_str(), options.command[0],
                   std::strerror(errno));
      _exit(127);
    }
    children[rank] = pid;
  }

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int running = processes, result = 0;
  bool stopping = false;
  Clock::time_point killAt{};
  auto stopOthers = [&](const std::string &why) {
    if (stopping)
      return;
    stopping = true;
    std::fprintf(stderr, "gdnrt-launch: %s; %s\n", why.c_str(),
                 options.threads ? "stopping it" : "stopping the other ranks");
    for (pid_t child : children)
      if (child > 0)
        kill(child, SIGTERM);
    killAt = Clock::now() + std::chrono::seconds(5);
  };
  while (running > 0) {
    int status = 0;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      for (int rank = 0; rank < processes; ++rank)
        if (children[rank] == done) {
          children[rank] = -1;
          --running;
          if (status != 0 && !stopping) {
            result = exitCodeOf(status);
            if (options.threads)
              std::fprintf(stderr, "gdnrt-launch: %s (%d threads) %s\n",
                           nameOf(rank).c_str(), options.ranks,
                           describeStatus(status).c_str());
            else
              stopOthers(nameOf(rank) + " " + describeStatus(status));
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
    // The rendezvous file and the ranks' progress board beside it
    // (ProgressBoard.h).
    std::remove((directory + "/nccl-id").c_str());
    std::remove((directory + "/nccl-id.progress").c_str());
    rmdir(directory.c_str());
  }
  return result;
}
