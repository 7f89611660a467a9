//===- run_ranks.cu - run a generated P-rank function rank by rank
//----------===//
//
// The multi-rank driver of the GPU suite. A function that the parallel
// passes distributed over an SP group of S and/or a CP group of P ranks
// (gdn_<f>_signature says which) runs on S x P ranks: threads of this
// process, each with its own gdnrt context and stream on device 0, joined
// by gdnrt's threads backend (or, for a world of one rank, a one-rank NCCL
// communicator: GDN_HARNESS_BACKEND=nccl). Under `gdnrt-launch -n P` (one
// process a rank, GDNRT_RANK set) this process runs its own rank alone, on
// device GDNRT_LOCAL_RANK, joined to the others through
// gdnrt_comm_from_environment (NCCL across processes, one GPU each): check
// and train then test the programs under real NCCL, each process printing
// its own rank's lines, and fault too (there the check's wait on the
// stream fails, naming the collective and, from the ranks' progress board,
// the peer). Each rank takes its own inputs,
// as gdn-run --rank-files cut them (IN/rank<r>/, and IN/all/ for values
// without a layout, which every rank holds), and is checked against
// gdn-run's float64 result for that rank. Modes:
//
//   check IN EXPECTED OUT RTOL  IN/rank<r>/argN.npy -> OUT/rank<r>/resultN.npy,
//                               each against EXPECTED/rank<r>/resultN.npy
//                               (relative RMS), and three runs bit-identical
//   train IN EXPECTED OUT RTOL  a training step: GDN_FN is @f_forward and
//                               GDN_BACKWARD_FN @f_backward; each rank runs
//                               the forward, keeps its saved values on the
//                               device, and runs the backward on its
//                               arguments, saved values and
//                               IN/rank<r>/cotangentN.npy; its results and
//                               gradients (OUT/rank<r>/gradN.npy, N the
//                               argument) are checked as above
//   gather OUT EXPECTED RTOL [AGAINST]
//                               across the ranks of an earlier check or
//                               train run (no GPU): a result or gradient
//                               without a layout is the same on every rank,
//                               bit for bit; with AGAINST (the OUT/rank0 of
//                               the one-rank program's run), the ranks'
//                               shares put together by gdn-run's
//                               EXPECTED/rank<r>/*.rows.npy (or .heads.npy)
//                               equal the one-rank run within RTOL
//
//   fault IN KIND               the last rank fails its peers (KIND absent:
//                               it joins the group but never calls the
//                               function; abort: it destroys its
//                               communicator at once); every other rank's
//                               call must fail within the context's timeout
//                               (GDN_HARNESS_TIMEOUT_MS, default 2000 here)
//                               with gdnrt's message naming the collective
//                               and that rank, and never hang
//
//   bench LENGTHS ITERS         times the function (with GDN_BACKWARD_FN: its
//                               forward, then its backward on random
//                               cotangents) on every rank at once, ITERS
//                               times after 3 warm-ups, on random inputs
//                               shaped by GDN_ARG<i>_SHAPE (as 8192x2048;
//                               T is this rank's rows, the total of the
//                               comma-separated LENGTHS over the ranks; N
//                               the sequences; GDN_RESULTS: @f's results
//                               among the forward's, default 1), and counts
//                               the bytes each
//                               rank's collectives send
//                               (gdnrt_comm_bytes_sent); ranks as threads
//                               only (a host barrier lines them up)
//
// RTOL bounds every relative RMS error but those EXPECTED/tolerances names
// (lines "gradN BOUND": docs/spec.md's looser bound of the gates'
// parameters' gradients) and those GDN_TOLERANCE_OVERRIDES names
// ("grad5=3e-2,grad6=3e-2": a known gap's bound for those tensors alone,
// test/Integration/known-gaps.txt). Exits non-zero on any failure; prints
// one line per check, rank by rank.
//
//===----------------------------------------------------------------------===//

#include GDN_HEADER
#include "bench_shapes.h"
#include "cuda_check.h"
#include "generated_entry.h"
#include "host_tensors.h"
#include "lengths.h"
#include "npy.h"
#include "reference_check.h"
#include "timing.cuh"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace harness;

/// The lines one rank prints, kept until every rank has finished so that
/// the output reads rank by rank.
struct Report {
  int rank = 0;
  int failures = 0;
  std::vector<std::string> lines;

  void expect(bool ok, const std::string &what) {
    lines.push_back(std::string(ok ? "PASS" : "FAIL") + ": rank " +
                    std::to_string(rank) + ": " + what);
    failures += !ok;
  }
};

/// One entry point of the generated library, through its C symbols.
struct Entry {
  const gdn_signature_t *signature;
  size_t (*workspaceBytes)(const gdn_tensor_t *);
  int (*resultShapes)(const gdn_tensor_t *, gdn_tensor_t *);
  int (*run)(const gdn_tensor_t *, gdn_tensor_t *, void *, gdnrt_context_t *);
  int (*check)(const gdn_tensor_t *, const void *, gdnrt_context_t *, char *,
               size_t);
};

Entry forwardEntry() {
  return {&FN_SIGNATURE, FN_WORKSPACE, FN_SHAPES, FN, FN_CHECK};
}

/// Device results of one call of an entry point, downloaded.
struct Call {
  std::vector<gdn_tensor_t> results; ///< on the device until freed
  std::vector<std::vector<char>> bytes;
  int status = GDN_SUCCESS;
  std::string message;
};

/// Runs `entry` on device tensors `args` on `context`'s stream: results
/// poisoned with NaN bytes first (an element no kernel writes shows), the
/// status checked by the entry's _check (which waits through the
/// communicators' watchdogs), the results downloaded and kept on the device.
Call callEntry(const Entry &entry, const std::vector<gdn_tensor_t> &args,
               gdnrt_context_t *context) {
  Call call;
  call.results.resize(entry.signature->num_results);
  if (int error = entry.resultShapes(args.data(), call.results.data())) {
    call.status = error;
    call.message = "result_shapes rejected the arguments";
    return call;
  }
  cudaStream_t stream = gdnrt_context_stream(context);
  for (gdn_tensor_t &r : call.results) {
    CUDA_OK(cudaMalloc(&r.data, std::max<size_t>(bytesOf(r), 16)));
    CUDA_OK(cudaMemsetAsync(r.data, 0xFF, bytesOf(r), stream));
  }
  const size_t workspaceBytes = entry.workspaceBytes(args.data());
  void *workspace = nullptr;
  CUDA_OK(cudaMalloc(&workspace, std::max<size_t>(workspaceBytes, 256)));
  call.status = entry.run(args.data(), call.results.data(), workspace, context);
  char message[512] = "";
  if (call.status == GDN_SUCCESS)
    call.status =
        entry.check(args.data(), workspace, context, message, sizeof(message));
  else
    std::snprintf(message, sizeof(message), "%s", gdnrt_last_error());
  // A collective that failed while the stream ran (NCCL: the entry point
  // only enqueues it) shows in the check's status; its reason is gdnrt's.
  if (call.status != GDN_SUCCESS && message[0] == '\0')
    std::snprintf(message, sizeof(message), "%s", gdnrt_last_error());
  call.message = message;
  CUDA_OK(cudaStreamSynchronize(stream));
  for (gdn_tensor_t &r : call.results) {
    std::vector<char> bytes(bytesOf(r));
    CUDA_OK(
        cudaMemcpy(bytes.data(), r.data, bytes.size(), cudaMemcpyDeviceToHost));
    call.bytes.push_back(std::move(bytes));
  }
  CUDA_OK(cudaFree(workspace));
  return call;
}

void freeTensors(std::vector<gdn_tensor_t> &tensors) {
  for (gdn_tensor_t &t : tensors)
    CUDA_OK(cudaFree(t.data));
  tensors.clear();
}

std::string rankDir(const std::string &dir, int rank) {
  return dir + "/rank" + std::to_string(rank);
}

/// Rank `rank`'s file `name` of gdn-run --rank-files under `dir`: its own
/// (a value with a layout) or every rank's (dir/all).
std::string rankFile(const std::string &dir, int rank,
                     const std::string &name) {
  const std::string own = rankDir(dir, rank) + "/" + name;
  struct stat info;
  return stat(own.c_str(), &info) == 0 ? own : dir + "/all/" + name;
}

/// Loads rank `rank`'s `prefix`N.npy for N < `count` with the signature's
/// dtypes.
bool loadTensors(const std::string &dir, int rank, const std::string &prefix,
                 int count, const gdn_dtype_t *dtypes,
                 std::vector<HostTensor> &tensors, Report &report) {
  for (int i = 0; i < count; ++i) {
    HostTensor tensor;
    std::string error;
    if (!readTensor(rankFile(dir, rank, prefix + std::to_string(i) + ".npy"),
                    dtypes[i], tensor, error)) {
      report.expect(false, error);
      return false;
    }
    tensors.push_back(std::move(tensor));
  }
  return true;
}

/// The bound of each relative RMS error: `rtol` but where EXPECTED/tolerances
/// names a file (`grad5 2e-2`).
struct Tolerances {
  double rtol = 0;
  std::map<std::string, double> bounds;

  static Tolerances read(const std::string &expectedDir, double rtol) {
    Tolerances t;
    t.rtol = rtol;
    std::ifstream in(expectedDir + "/tolerances");
    std::string name;
    double bound;
    while (in >> name >> bound)
      t.bounds[name] = bound;
    // A known gap's bounds for some tensors, over the file's.
    if (const char *overrides = std::getenv("GDN_TOLERANCE_OVERRIDES")) {
      std::stringstream list(overrides);
      std::string item;
      while (std::getline(list, item, ',')) {
        const size_t equals = item.find('=');
        char *end = nullptr;
        const double value =
            equals == std::string::npos ? 0 : std::strtod(item.c_str() + equals + 1, &end);
        if (equals == std::string::npos || equals == 0 || !end || *end || !(value > 0)) {
          std::fprintf(stderr,
                       "error: GDN_TOLERANCE_OVERRIDES item '%s' is not NAME=BOUND "
                       "(as grad5=3e-2) with a positive bound\n",
                       item.c_str());
          std::exit(2);
        }
        t.bounds[item.substr(0, equals)] = value;
      }
    }
    return t;
  }
  double of(const std::string &name) const {
    auto it = bounds.find(name);
    return it == bounds.end() ? rtol : it->second;
  }
};

/// compareWithReference (reference_check.h), its line in `report`.
void compareWithReference(const std::string &what, const gdn_tensor_t &tensor,
                          const std::vector<char> &bytes,
                          const std::string &expected, const std::string &out,
                          double rtol, Report &report) {
  harness::compareWithReference(
      what, tensor, bytes, expected, out, rtol,
      [&](bool ok, const std::string &line) { report.expect(ok, line); });
}

/// What every rank of a job shares: its contexts' communicators come from
/// one threads-backend rendezvous (or a one-rank NCCL communicator).
struct World {
  int spRanks = 0, cpRanks = 0; ///< 0: the function uses no such group
  int size = 1;
  std::string rendezvous;
  bool nccl = false;
  /// Under gdnrt-launch -n P: this process's rank (GDNRT_RANK), the only
  /// one it runs; -1 when the ranks are threads of this process.
  int processRank = -1;
  /// The device this process's ranks run on (GDNRT_LOCAL_RANK under
  /// gdnrt-launch, else 0).
  int device = 0;
  /// Every rank's context timeout: GDN_HARNESS_TIMEOUT_MS, else the mode's
  /// default (makeWorld).
  int64_t timeoutMs = 120000;
};

/// Creates rank `rank`'s context on the world's device with its own stream
/// and binds the function's groups; false (with a failed check) when that
/// fails.
bool openRank(const World &world, int rank, gdnrt_context_t **context,
              std::vector<gdnrt_comm_t *> &comms, cudaStream_t *stream,
              Report &report) {
  CUDA_OK(cudaSetDevice(world.device));
  CUDA_OK(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
  if (gdnrt_context_create(world.device, *stream, context) != GDN_SUCCESS) {
    report.expect(false,
                  std::string("gdnrt_context_create: ") + gdnrt_last_error());
    return false;
  }
  gdnrt_context_set_timeout(*context, world.timeoutMs);
  if (world.spRanks == 0 && world.cpRanks == 0)
    return true;
  gdnrt_comm_t *comm = nullptr;
  int status;
  if (world.processRank >= 0) {
    status = gdnrt_comm_from_environment(*context, &comm);
  } else if (world.nccl) {
    gdnrt_unique_id_t id;
    status = gdnrt_unique_id(&id);
    if (status == GDN_SUCCESS)
      status = gdnrt_comm_init(*context, &id, rank, world.size, &comm);
  } else {
    status = gdnrt_comm_bootstrap(*context, world.rendezvous.c_str(), rank,
                                  world.size, &comm);
  }
  if (status != GDN_SUCCESS) {
    report.expect(false,
                  std::string("the communicator: ") + gdnrt_last_error());
    return false;
  }
  comms.push_back(comm);
  gdnrt_comm_t *sp = world.spRanks ? comm : nullptr;
  gdnrt_comm_t *cp = world.cpRanks ? comm : nullptr;
  if (world.spRanks && world.cpRanks) {
    if (gdnrt_comm_split_grid(comm, world.spRanks, &sp, &cp) != GDN_SUCCESS) {
      report.expect(false, std::string("gdnrt_comm_split_grid: ") +
                               gdnrt_last_error());
      return false;
    }
    comms.push_back(sp);
    comms.push_back(cp);
  }
  if (sp)
    gdnrt_context_bind(*context, GDNRT_GROUP_SP, sp);
  if (cp)
    gdnrt_context_bind(*context, GDNRT_GROUP_CP, cp);
  return true;
}

void closeRank(gdnrt_context_t *context, std::vector<gdnrt_comm_t *> &comms,
               cudaStream_t stream, Report &report) {
  // Sub-groups first, then the world they were split from.
  for (auto it = comms.rbegin(); it != comms.rend(); ++it)
    if (gdnrt_comm_destroy(*it) != GDN_SUCCESS)
      report.expect(false,
                    std::string("gdnrt_comm_destroy: ") + gdnrt_last_error());
  if (context && gdnrt_context_destroy(context) != GDN_SUCCESS)
    report.expect(false,
                  std::string("gdnrt_context_destroy: ") + gdnrt_last_error());
  CUDA_OK(cudaStreamDestroy(stream));
}

/// The runs of one rank whose results are compared for determinism.
constexpr int kRuns = 3;

/// check mode, on one rank.
void checkRank(const World &world, int rank, const std::string &in,
               const std::string &expectedDir, const std::string &out,
               double rtol, Report &report) {
  gdnrt_context_t *context = nullptr;
  std::vector<gdnrt_comm_t *> comms;
  cudaStream_t stream = nullptr;
  if (openRank(world, rank, &context, comms, &stream, report)) {
    const Entry entry = forwardEntry();
    std::vector<HostTensor> inputs;
    if (loadTensors(in, rank, "arg", entry.signature->num_args,
                    entry.signature->arg_dtypes, inputs, report)) {
      std::vector<gdn_tensor_t> args;
      for (const HostTensor &t : inputs)
        args.push_back(upload(t));
      std::vector<std::vector<char>> first;
      bool same = true;
      for (int run = 0; run < kRuns; ++run) {
        Call call = callEntry(entry, args, context);
        if (call.status != GDN_SUCCESS) {
          report.expect(false, "the function runs (status " +
                                   std::to_string(call.status) + ": " +
                                   call.message + ")");
          freeTensors(call.results);
          same = false;
          break;
        }
        if (run == 0) {
          report.expect(true, "the function runs");
          for (int r = 0; r < entry.signature->num_results; ++r)
            compareWithReference(
                "result #" + std::to_string(r), call.results[r], call.bytes[r],
                rankFile(expectedDir, rank,
                         "result" + std::to_string(r) + ".npy"),
                rankDir(out, rank) + "/result" + std::to_string(r) + ".npy",
                rtol, report);
          first = call.bytes;
        } else {
          same &= call.bytes == first;
        }
        freeTensors(call.results);
      }
      if (!first.empty())
        report.expect(same, std::to_string(kRuns) + " runs are bit-identical");
      freeTensors(args);
    }
  }
  closeRank(context, comms, stream, report);
}

#ifdef GDN_BACKWARD_FN
Entry backwardEntry() {
  return {&BWD_SIGNATURE, BWD_WORKSPACE, BWD_SHAPES, BWD, BWD_CHECK};
}

bool isFloat(gdn_dtype_t dtype) { return dtype != GDN_I32 && dtype != GDN_I64; }

/// train mode, on one rank: @f_forward, then @f_backward on the arguments,
/// the saved values (the forward's results after @f's own) and the
/// cotangents.
void trainRank(const World &world, int rank, const std::string &in,
               const std::string &expectedDir, const std::string &out,
               double rtol, Report &report) {
  gdnrt_context_t *context = nullptr;
  std::vector<gdnrt_comm_t *> comms;
  cudaStream_t stream = nullptr;
  const Entry forward = forwardEntry(), backward = backwardEntry();
  const int numArgs = forward.signature->num_args;
  // @f_forward returns @f's results, then the values it saves; gdn-run wrote
  // one reference per result of @f. @f_backward takes @f's arguments, the
  // saved values and one cotangent per result (all floating-point here).
  const int numForward = forward.signature->num_results;
  int numResults = 0;
  struct stat info;
  while (stat(rankFile(expectedDir, rank,
                       "result" + std::to_string(numResults) + ".npy")
                  .c_str(),
              &info) == 0)
    ++numResults;
  const int numCotangents = numResults, numSaved = numForward - numResults;
  if (numResults == 0 || numSaved < 0 ||
      backward.signature->num_args != numArgs + numSaved + numCotangents) {
    report.expect(false, std::string(backward.signature->name) +
                             " does not take the arguments, the saved values "
                             "and one cotangent per result of " +
                             forward.signature->name + " (" +
                             std::to_string(numResults) +
                             " results in the references)");
    return;
  }
  int floatArgs = 0;
  for (int a = 0; a < numArgs; ++a)
    floatArgs += isFloat(forward.signature->arg_dtypes[a]);
  if (backward.signature->num_results != floatArgs) {
    report.expect(false, std::string(backward.signature->name) + " returns " +
                             std::to_string(backward.signature->num_results) +
                             " gradients; " + forward.signature->name +
                             " has " + std::to_string(floatArgs) +
                             " floating-point arguments");
    return;
  }
  if (openRank(world, rank, &context, comms, &stream, report)) {
    std::vector<HostTensor> inputs, cotangents;
    std::vector<gdn_dtype_t> cotangentDtypes(
        backward.signature->arg_dtypes + numArgs + numSaved,
        backward.signature->arg_dtypes + backward.signature->num_args);
    if (loadTensors(in, rank, "arg", numArgs, forward.signature->arg_dtypes,
                    inputs, report) &&
        loadTensors(in, rank, "cotangent", numCotangents,
                    cotangentDtypes.data(), cotangents, report)) {
      std::vector<gdn_tensor_t> args, cots;
      for (const HostTensor &t : inputs)
        args.push_back(upload(t));
      for (const HostTensor &t : cotangents)
        cots.push_back(upload(t));
      std::vector<std::vector<char>> first;
      bool same = true;
      for (int run = 0; run < kRuns; ++run) {
        Call results = callEntry(forward, args, context);
        if (results.status != GDN_SUCCESS) {
          report.expect(false, std::string(forward.signature->name) +
                                   " runs (status " +
                                   std::to_string(results.status) + ": " +
                                   results.message + ")");
          freeTensors(results.results);
          same = false;
          break;
        }
        std::vector<gdn_tensor_t> backwardArgs = args;
        backwardArgs.insert(backwardArgs.end(),
                            results.results.begin() + numResults,
                            results.results.end());
        backwardArgs.insert(backwardArgs.end(), cots.begin(), cots.end());
        Call gradients = callEntry(backward, backwardArgs, context);
        if (gradients.status != GDN_SUCCESS) {
          report.expect(false, std::string(backward.signature->name) +
                                   " runs (status " +
                                   std::to_string(gradients.status) + ": " +
                                   gradients.message + ")");
          freeTensors(results.results);
          freeTensors(gradients.results);
          same = false;
          break;
        }
        std::vector<std::vector<char>> bytes(
            results.bytes.begin(), results.bytes.begin() + numResults);
        bytes.insert(bytes.end(), gradients.bytes.begin(),
                     gradients.bytes.end());
        if (run == 0) {
          report.expect(true, "the forward and the backward run");
          for (int r = 0; r < numResults; ++r)
            compareWithReference(
                "result #" + std::to_string(r), results.results[r],
                results.bytes[r],
                rankFile(expectedDir, rank,
                         "result" + std::to_string(r) + ".npy"),
                rankDir(out, rank) + "/result" + std::to_string(r) + ".npy",
                rtol, report);
          // Gradient k is that of the k-th floating-point argument.
          int k = 0;
          for (int a = 0; a < numArgs; ++a) {
            if (!isFloat(forward.signature->arg_dtypes[a]))
              continue;
            compareWithReference("gradient of argument #" + std::to_string(a),
                                 gradients.results[k], gradients.bytes[k],
                                 rankFile(expectedDir, rank,
                                          "grad" + std::to_string(a) + ".npy"),
                                 rankDir(out, rank) + "/grad" +
                                     std::to_string(a) + ".npy",
                                 Tolerances::read(expectedDir, rtol)
                                     .of("grad" + std::to_string(a)),
                                 report);
            ++k;
          }
          first = bytes;
        } else {
          same &= bytes == first;
        }
        freeTensors(results.results);
        freeTensors(gradients.results);
      }
      if (!first.empty())
        report.expect(same, std::to_string(kRuns) +
                                " training steps are bit-identical");
      freeTensors(args);
      freeTensors(cots);
    }
  }
  closeRank(context, comms, stream, report);
}
#endif

/// True when `message` names one of gdnrt's collectives: a "gdnrt_" call
/// other than the wait that reported it.
bool namesCollective(const std::string &message) {
  for (size_t at = message.find("gdnrt_"); at != std::string::npos;
       at = message.find("gdnrt_", at + 1))
    if (message.compare(at, 15, "gdnrt_comm_wait") != 0)
      return true;
  return false;
}

/// fault mode, on one rank (see the header).
void faultRank(const World &world, int rank, const std::string &in,
               const std::string &kind, Report &report) {
  gdnrt_context_t *context = nullptr;
  std::vector<gdnrt_comm_t *> comms;
  cudaStream_t stream = nullptr;
  const int culprit = world.size - 1;
  const int64_t timeoutMs = world.timeoutMs;
  if (!openRank(world, rank, &context, comms, &stream, report)) {
    closeRank(context, comms, stream, report);
    return;
  }
  if (rank == culprit) {
    if (kind == "absent") // outlive the others' timeout, then leave
      std::this_thread::sleep_for(std::chrono::milliseconds(timeoutMs + 1000));
    // Its own teardown, after the peers gave up on it, is not what is
    // checked (under NCCL the finalize may report the peers' abort).
    Report teardown;
    closeRank(context, comms, stream, teardown);
    return;
  }
  const Entry entry = forwardEntry();
  std::vector<HostTensor> inputs;
  if (loadTensors(in, rank, "arg", entry.signature->num_args,
                  entry.signature->arg_dtypes, inputs, report)) {
    std::vector<gdn_tensor_t> args;
    for (const HostTensor &t : inputs)
      args.push_back(upload(t));
    const auto start = std::chrono::steady_clock::now();
    Call call = callEntry(entry, args, context);
    const double seconds = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count();
    const std::string peer = "rank " + std::to_string(culprit);
    report.expect(call.status != GDN_SUCCESS,
                  "the function fails (status " + std::to_string(call.status) +
                      ", " + std::to_string(seconds) + " s): " + call.message);
    report.expect(namesCollective(call.message) &&
                      call.message.find(peer) != std::string::npos,
                  "the message names the collective and " + peer);
    report.expect(seconds < timeoutMs / 1000.0 + 5.0,
                  "it fails within the timeout (" +
                      std::to_string(timeoutMs) + " ms) and some slack");
    freeTensors(call.results);
    freeTensors(args);
  }
  closeRank(context, comms, stream, report);
}

/// Runs `body` on every rank of `world`, one thread each (under
/// gdnrt-launch, on this process's rank alone), and prints the ranks'
/// reports in rank order. Returns the number of failed checks.
int runRanks(const World &world,
             const std::function<void(int, Report &)> &body) {
  if (world.processRank >= 0) {
    Report report;
    report.rank = world.processRank;
    body(world.processRank, report);
    for (const std::string &line : report.lines)
      std::printf("%s\n", line.c_str());
    return report.failures;
  }
  std::vector<Report> reports(world.size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world.size; ++rank) {
    reports[rank].rank = rank;
    threads.emplace_back([&, rank] { body(rank, reports[rank]); });
  }
  for (std::thread &thread : threads)
    thread.join();
  int failures = 0;
  for (const Report &report : reports) {
    for (const std::string &line : report.lines)
      std::printf("%s\n", line.c_str());
    failures += report.failures;
  }
  return failures;
}

World makeWorld(const std::string &out, int64_t defaultTimeoutMs = 120000) {
  World world;
  const char *timeout = std::getenv("GDN_HARNESS_TIMEOUT_MS");
  world.timeoutMs = timeout ? std::atoll(timeout) : defaultTimeoutMs;
  world.spRanks = FN_SIGNATURE.sp_ranks;
  world.cpRanks = FN_SIGNATURE.cp_ranks;
  world.size = std::max(world.spRanks, 1) * std::max(world.cpRanks, 1);
  const char *backend = std::getenv("GDN_HARNESS_BACKEND");
  world.nccl = backend && std::string(backend) == "nccl";
  world.rendezvous = "threads:run_ranks-" + std::to_string(getpid());
  if (const char *rank = std::getenv("GDNRT_RANK")) {
    // One process a rank (gdnrt-launch -n P): the launch must be as wide
    // as the program, and each process needs a GPU of its own.
    const char *size = std::getenv("GDNRT_WORLD_SIZE");
    const char *local = std::getenv("GDNRT_LOCAL_RANK");
    world.processRank = std::atoi(rank);
    if (!size || std::atoi(size) != world.size) {
      std::fprintf(stderr,
                   "%s runs on SP %d x CP %d = %d ranks, but gdnrt-launch "
                   "started %s: launch it with -n %d\n",
                   FN_SIGNATURE.name, std::max(world.spRanks, 1),
                   std::max(world.cpRanks, 1), world.size,
                   size ? size : "an unknown number", world.size);
      std::exit(2);
    }
    int devices = 0;
    CUDA_OK(cudaGetDeviceCount(&devices));
    // gdnrt-launch sets the local rank; without it, ranks take the GPUs in
    // turn.
    world.device = local ? std::atoi(local)
                         : (devices > 0 ? world.processRank % devices : 0);
    if (world.device < 0 || world.device >= devices) {
      std::fprintf(stderr,
                   "rank %d's GDNRT_LOCAL_RANK is %d, but this machine has "
                   "%d GPU(s): NCCL needs a GPU per rank; launch at most %d "
                   "ranks a machine, or run the ranks as threads (without "
                   "gdnrt-launch)\n",
                   world.processRank, world.device, devices, devices);
      std::exit(2);
    }
  }
  if (!out.empty())
    for (int rank = 0; rank < world.size; ++rank)
      mkdir(rankDir(out, rank).c_str(), 0755);
  return world;
}

/// Why the ranks' shares of one value cannot be put together along `dim`
/// with their index maps, or "" when they can: every rank has a map as long
/// as its share along `dim`, and the shares agree on the other dimensions.
std::string checkShares(const std::vector<npy::Array> &shares,
                        const std::vector<npy::Array> &maps, size_t dim) {
  for (size_t rank = 0; rank < shares.size(); ++rank) {
    const std::vector<int64_t> &shape = shares[rank].shape;
    if (shape.size() <= dim || shape.size() != shares[0].shape.size())
      return "rank " + std::to_string(rank) + "'s share has rank " +
             std::to_string(shape.size()) + ", rank 0's " +
             std::to_string(shares[0].shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != dim && shape[d] != shares[0].shape[d])
        return "rank " + std::to_string(rank) + "'s share has size " +
               std::to_string(shape[d]) + " in dimension " + std::to_string(d) +
               ", rank 0's " + std::to_string(shares[0].shape[d]);
    if (static_cast<int64_t>(maps[rank].values.size()) != shape[dim])
      return "rank " + std::to_string(rank) + " has " +
             std::to_string(maps[rank].values.size()) +
             " indices for a share of " + std::to_string(shape[dim]) +
             " (a value with a layout on some ranks only?)";
  }
  return "";
}

/// gather mode: the checks across ranks of one run, on the host.
int gather(const std::string &out, const std::string &expectedDir, double rtol,
           const std::string &against) {
  const int ranks =
      std::max(FN_SIGNATURE.sp_ranks, 1) * std::max(FN_SIGNATURE.cp_ranks, 1);
  const Tolerances tolerances = Tolerances::read(expectedDir, rtol);
  int failures = 0, checked = 0;
  auto expect = [&](bool ok, const std::string &what) {
    std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
    failures += !ok;
    ++checked;
  };
  // Every file of rank 0's output: resultN.npy and gradN.npy.
  for (const char *prefix : {"result", "grad"}) {
    for (int n = 0; n < 64; ++n) {
      const std::string name = prefix + std::to_string(n);
      npy::Array local0;
      std::string error;
      if (!npy::read(rankDir(out, 0) + "/" + name + ".npy", local0, error))
        continue;
      // Where each rank's share sits, if the value has a layout.
      std::vector<npy::Array> shares(ranks), maps(ranks);
      bool sharded = false, heads = false, loaded = true;
      for (int rank = 0; rank < ranks; ++rank) {
        loaded &= npy::read(rankDir(out, rank) + "/" + name + ".npy",
                            shares[rank], error);
        const std::string map = rankDir(expectedDir, rank) + "/" + name;
        std::string ignored;
        if (npy::read(map + ".rows.npy", maps[rank], ignored)) {
          sharded = true;
        } else if (npy::read(map + ".heads.npy", maps[rank], ignored)) {
          sharded = heads = true;
        }
      }
      if (!loaded) {
        expect(false, error);
        continue;
      }
      npy::Array global;
      if (!sharded) {
        bool same = true;
        for (int rank = 1; rank < ranks; ++rank)
          same &= shares[rank].values == shares[0].values;
        expect(same, name + " (no layout) is the same on all " +
                         std::to_string(ranks) + " ranks, bit for bit");
        global = shares[0];
      } else {
        // Put the shares together along dim 0 (rows) or 1 (heads).
        const size_t dim = heads ? 1 : 0;
        std::string bad = checkShares(shares, maps, dim);
        if (!bad.empty()) {
          expect(false, name + ": " + bad);
          continue;
        }
        global.shape = shares[0].shape;
        int64_t extent = 0;
        for (int rank = 0; rank < ranks; ++rank)
          extent += shares[rank].shape[dim];
        global.shape[dim] = extent;
        int64_t outer = 1, inner = 1;
        for (size_t d = 0; d < dim; ++d)
          outer *= global.shape[d];
        for (size_t d = dim + 1; d < global.shape.size(); ++d)
          inner *= global.shape[d];
        // NaN where no rank's map lands, so a gap fails the comparison.
        global.values.assign(outer * extent * inner,
                             std::numeric_limits<double>::quiet_NaN());
        for (int rank = 0; rank < ranks; ++rank) {
          const int64_t local = shares[rank].shape[dim];
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < local; ++i) {
              const int64_t g = static_cast<int64_t>(maps[rank].values[i]);
              if (g < 0 || g >= extent) {
                bad = "rank " + std::to_string(rank) + "'s index " +
                      std::to_string(g) + " is outside [0, " +
                      std::to_string(extent) + ")";
                break;
              }
              std::copy_n(shares[rank].values.begin() + (o * local + i) * inner,
                          inner,
                          global.values.begin() + (o * extent + g) * inner);
            }
        }
        if (!bad.empty()) {
          expect(false, name + ": " + bad);
          continue;
        }
      }
      if (against.empty())
        continue;
      npy::Array reference;
      if (!npy::read(against + "/" + name + ".npy", reference, error)) {
        expect(false, error);
        continue;
      }
      bool finite = true;
      const double rel = relativeRms(global.values, reference.values, finite);
      const double bound = tolerances.of(name);
      char line[256];
      std::snprintf(line, sizeof(line),
                    "%s of the %d ranks, put together, matches the one-rank "
                    "run: rel_rms = %.3e (rtol %.1e)%s",
                    name.c_str(), ranks, rel, bound,
                    finite ? "" : ", NON-FINITE values");
      expect(finite && global.shape == reference.shape && rel <= bound, line);
    }
  }
  if (checked == 0)
    expect(false, "no result or gradient of the run was found in " + out);
  return failures ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// bench
//===----------------------------------------------------------------------===//

/// A reusable barrier for the rank threads (C++17 has none).
class Barrier {
public:
  explicit Barrier(int count) : count(count) {}
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex);
    const uint64_t round = rounds;
    if (++waiting == count) {
      waiting = 0;
      ++rounds;
      ready.notify_all();
      return;
    }
    ready.wait(lock, [&] { return rounds != round; });
  }

private:
  std::mutex mutex;
  std::condition_variable ready;
  int count, waiting = 0;
  uint64_t rounds = 0;
};

/// Random host tensors of `dtype` and `shape`.
HostTensor randomTensor(gdn_dtype_t dtype, std::vector<int64_t> shape,
                        std::mt19937 &rng) {
  std::normal_distribution<float> normal;
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  HostTensor t{dtype, std::move(shape), std::vector<double>(n)};
  for (double &v : t.values)
    v = normal(rng);
  return t;
}

/// The bench's arguments of rank `rank`: offsets of `lengths`, the rest
/// random, shaped by GDN_ARG<i>_SHAPE with T = `rows`.
std::vector<HostTensor> benchInputs(const std::vector<int64_t> &lengths,
                                    int64_t rows, int rank, Report &report) {
  const std::vector<double> cu = offsetsOf<double>(lengths);
  std::mt19937 rng(17 + rank);
  std::vector<HostTensor> inputs;
  for (int i = 0; i < FN_SIGNATURE.num_args; ++i) {
    const gdn_role_t role = FN_SIGNATURE.arg_roles[i];
    if (role == GDN_ROLE_CU_SEQLENS || role == GDN_ROLE_CU_PADDED) {
      inputs.push_back(
          {FN_SIGNATURE.arg_dtypes[i], {static_cast<int64_t>(cu.size())}, cu});
      continue;
    }
    const char *dims = benchShapeText(i);
    if (!dims) {
      report.expect(false, "GDN_ARG" + std::to_string(i) +
                               "_SHAPE gives argument " + std::to_string(i) +
                               "'s shape");
      return {};
    }
    inputs.push_back(randomTensor(
        FN_SIGNATURE.arg_dtypes[i],
        parseBenchShape(dims, rows, static_cast<int64_t>(lengths.size())),
        rng));
  }
  return inputs;
}

/// Device results of `entry` on `args`, allocated once for many calls.
struct Outputs {
  std::vector<gdn_tensor_t> results;
  void *workspace = nullptr;
};

bool allocateOutputs(const Entry &entry, const std::vector<gdn_tensor_t> &args,
                     Outputs &outputs, Report &report) {
  outputs.results.resize(entry.signature->num_results);
  if (entry.resultShapes(args.data(), outputs.results.data())) {
    report.expect(false, std::string(entry.signature->name) +
                             "_result_shapes rejects the bench shapes (set "
                             "GDN_ARG<i>_SHAPE)");
    return false;
  }
  for (gdn_tensor_t &r : outputs.results)
    CUDA_OK(cudaMalloc(&r.data, std::max<size_t>(bytesOf(r), 16)));
  CUDA_OK(cudaMalloc(&outputs.workspace,
                     std::max<size_t>(entry.workspaceBytes(args.data()), 256)));
  return true;
}

struct BenchResult {
  std::vector<double> forward, backward;      ///< ms per iteration (rank 0)
  uint64_t sentForward = 0, sentBackward = 0; ///< bytes per call, this rank
};

/// One rank of the bench: every iteration starts and ends at a barrier of
/// all ranks, so the times are the layer's on all of them at once.
void benchRank(const World &world, int rank,
               const std::vector<int64_t> &lengths, int iterations,
               Barrier &barrier, BenchResult &result, Report &report) {
  gdnrt_context_t *context = nullptr;
  std::vector<gdnrt_comm_t *> comms;
  cudaStream_t stream = nullptr;
  // Every rank must reach every barrier, even after a failure.
  const int phases = 2 * (3 + iterations) + 1;
  int phase = 0;
  auto sync = [&] {
    barrier.arrive();
    ++phase;
  };
  auto sent = [&] {
    uint64_t bytes = 0;
    for (gdnrt_comm_t *comm : comms)
      bytes += gdnrt_comm_bytes_sent(comm);
    return bytes;
  };
  int64_t total = 0;
  for (int64_t length : lengths)
    total += length;
  bool ok = openRank(world, rank, &context, comms, &stream, report);
  // The world communicator of an S x P grid only splits; its groups send.
  if (comms.size() == 3)
    comms.erase(comms.begin());
  const Entry forward = forwardEntry();
  std::vector<gdn_tensor_t> args, backwardArgs;
  size_t cotangentsFrom = 0; ///< backwardArgs from here on: the cotangents
  Outputs fwd, bwd;
  std::vector<HostTensor> inputs;
  if (ok)
    inputs = benchInputs(lengths, total / world.size, rank, report);
  ok = ok && !inputs.empty();
  if (ok) {
    for (const HostTensor &t : inputs)
      args.push_back(upload(t));
    ok = allocateOutputs(forward, args, fwd, report);
  }
#ifdef GDN_BACKWARD_FN
  const Entry backward = backwardEntry();
  if (ok) {
    // Arguments, the values the forward saved (its results after @f's
    // GDN_RESULTS own, default 1), then a random cotangent per result.
    const char *resultsText = std::getenv("GDN_RESULTS");
    const int results = resultsText ? std::atoi(resultsText) : 1;
    backwardArgs = args;
    backwardArgs.insert(backwardArgs.end(), fwd.results.begin() + results,
                        fwd.results.end());
    cotangentsFrom = backwardArgs.size();
    const int cotangents =
        backward.signature->num_args - static_cast<int>(backwardArgs.size());
    std::mt19937 rng(29 + rank);
    for (int c = 0; c < cotangents && c < results; ++c) {
      const gdn_tensor_t &r = fwd.results[c];
      backwardArgs.push_back(upload(randomTensor(
          r.dtype, std::vector<int64_t>(r.shape, r.shape + r.rank), rng)));
    }
    if (cotangents != results)
      report.expect(false, std::string(backward.signature->name) + " takes " +
                               std::to_string(cotangents) +
                               " cotangents after the saved values, but the "
                               "forward returns " +
                               std::to_string(results) +
                               " of its own (GDN_RESULTS)");
    ok = cotangents == results &&
         allocateOutputs(backward, backwardArgs, bwd, report);
  }
#endif
  auto run = [&](const Entry &entry, const std::vector<gdn_tensor_t> &in,
                 Outputs &out) {
    if (!ok)
      return;
    if (int error =
            entry.run(in.data(), out.results.data(), out.workspace, context)) {
      report.expect(false, std::string(entry.signature->name) + " runs (" +
                               std::to_string(error) + ": " +
                               gdnrt_last_error() + ")");
      ok = false;
      return;
    }
    CUDA_OK(cudaStreamSynchronize(stream));
  };
  for (int i = 0; i < 3 + iterations; ++i) {
    const bool timed = i >= 3;
    sync();
    const auto start = std::chrono::steady_clock::now();
    const uint64_t before = sent();
    run(forward, args, fwd);
    const uint64_t between = sent();
    sync();
    const auto middle = std::chrono::steady_clock::now();
#ifdef GDN_BACKWARD_FN
    run(backward, backwardArgs, bwd);
#endif
    if (timed && rank == 0) {
      // Rank 0's clock after both barriers: the slowest rank's time.
      result.forward.push_back(
          std::chrono::duration<double, std::milli>(middle - start).count());
    }
    result.sentForward = between - before;
    result.sentBackward = sent() - between;
    sync();
    if (timed && rank == 0)
      result.backward.push_back(std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - middle)
                                    .count());
  }
  while (phase < phases)
    sync();
  if (ok) {
    char message[512] = "";
    report.expect(forward.check(args.data(), fwd.workspace, context, message,
                                sizeof(message)) == GDN_SUCCESS,
                  std::string("the bench inputs are valid: ") + message);
  }
  // The cotangents, uploaded after the arguments and the saved results
  // (which args and fwd own).
  std::vector<gdn_tensor_t> cotangentTensors(
      backwardArgs.begin() + std::min(cotangentsFrom, backwardArgs.size()),
      backwardArgs.end());
  freeTensors(cotangentTensors);
  freeTensors(args);
  freeTensors(fwd.results);
  freeTensors(bwd.results);
  if (fwd.workspace)
    CUDA_OK(cudaFree(fwd.workspace));
  if (bwd.workspace)
    CUDA_OK(cudaFree(bwd.workspace));
  closeRank(context, comms, stream, report);
}

int bench(const World &world, const std::string &lengthsText, int iterations) {
  const std::vector<int64_t> lengths = parseLengths(lengthsText);
  Barrier barrier(world.size);
  std::vector<BenchResult> results(world.size);
  const int failures = runRanks(world, [&](int rank, Report &report) {
    benchRank(world, rank, lengths, iterations, barrier, results[rank], report);
  });
  uint64_t maxForward = 0, maxBackward = 0;
  for (const BenchResult &r : results) {
    maxForward = std::max(maxForward, r.sentForward);
    maxBackward = std::max(maxBackward, r.sentBackward);
  }
  std::printf("BENCH %s ranks=%d (SP %d x CP %d) lengths=%s: forward %.3f ms, "
              "%.2f MB sent per rank (most)",
              FN_SIGNATURE.name, world.size, world.spRanks, world.cpRanks,
              lengthsText.c_str(), median(results[0].forward),
              maxForward / 1e6);
#ifdef GDN_BACKWARD_FN
  std::printf("; backward %.3f ms, %.2f MB sent per rank (most)",
              median(results[0].backward), maxBackward / 1e6);
#endif
  std::printf("\n");
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  // Line by line: under gdnrt-launch a rank stopped after a peer failed
  // still shows what it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool rankMode = (mode == "check" || mode == "train") && argc == 6;
  const bool faultMode = mode == "fault" && argc == 4 &&
                         (std::string(argv[3]) == "absent" ||
                          std::string(argv[3]) == "abort");
  if (!rankMode && !faultMode &&
      !(mode == "gather" && (argc == 5 || argc == 6)) &&
      !(mode == "bench" && argc == 4)) {
    std::fprintf(stderr,
                 "usage: %s check IN EXPECTED OUT RTOL | train IN EXPECTED "
                 "OUT RTOL | gather OUT EXPECTED RTOL [AGAINST] | fault IN "
                 "absent|abort | bench LENGTHS ITERS\n",
                 argv[0]);
    return 2;
  }
  if (faultMode) {
    const World world = makeWorld("", /*defaultTimeoutMs=*/2000);
    if (world.size < 2 || world.nccl) {
      std::fprintf(stderr,
                   "fault needs a program of several ranks, as threads of "
                   "this process or as processes under gdnrt-launch (not "
                   "GDN_HARNESS_BACKEND=nccl, a world of one rank)\n");
      return 2;
    }
    std::printf("%s on %d rank(s), rank %d %s\n", FN_SIGNATURE.name,
                world.size, world.size - 1, argv[3]);
    return runRanks(world,
                    [&](int rank, Report &report) {
                      faultRank(world, rank, argv[2], argv[3], report);
                    })
               ? 1
               : 0;
  }
  if (mode == "bench") {
    if (std::getenv("GDNRT_RANK")) {
      std::fprintf(stderr, "bench runs the ranks as threads of one process "
                           "(a host barrier lines them up): run it without "
                           "gdnrt-launch\n");
      return 2;
    }
    const World world = makeWorld("");
    return bench(world, argv[2], std::atoi(argv[3]));
  }
  if (mode == "gather")
    return gather(argv[2], argv[3], std::atof(argv[4]),
                  argc == 6 ? argv[5] : "");
  const std::string in = argv[2], expected = argv[3], out = argv[4];
  const double rtol = std::atof(argv[5]);
  const World world = makeWorld(out);
  if (world.nccl && world.size != 1) {
    std::fprintf(stderr,
                 "GDN_HARNESS_BACKEND=nccl runs a world of one rank (NCCL "
                 "refuses two ranks on one GPU); %s needs %d\n",
                 FN_SIGNATURE.name, world.size);
    return 2;
  }
  if (world.processRank >= 0)
    std::printf("%s on %d rank(s) (SP %d x CP %d), rank %d in this process "
                "(gdnrt-launch), device %d\n",
                FN_SIGNATURE.name, world.size, world.spRanks, world.cpRanks,
                world.processRank, world.device);
  else
    std::printf("%s on %d rank(s) (SP %d x CP %d, %s backend)\n",
                FN_SIGNATURE.name, world.size, world.spRanks, world.cpRanks,
                world.nccl ? "NCCL" : "threads");
  int failures;
  if (mode == "check") {
    failures = runRanks(world, [&](int rank, Report &report) {
      checkRank(world, rank, in, expected, out, rtol, report);
    });
  } else {
#ifdef GDN_BACKWARD_FN
    failures = runRanks(world, [&](int rank, Report &report) {
      trainRank(world, rank, in, expected, out, rtol, report);
    });
#else
    std::fprintf(stderr, "train needs -DGDN_BACKWARD_FN=gdn_<f>_backward\n");
    return 2;
#endif
  }
  return failures ? 1 : 0;
}
