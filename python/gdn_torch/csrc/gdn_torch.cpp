//===- gdn_torch.cpp - call generated GDN entry points on torch tensors ----===//
//
// The PyTorch extension's native half. Generated libraries export, for every
// compiled function f, the whole-function entry points of docs/codegen.md:
// gdn_<f>_signature, gdn_<f>_workspace_bytes, gdn_<f>_result_shapes,
// gdn_<f> and gdn_<f>_check. This file opens such a library, finds those
// symbols, and calls them on CUDA tensors: results and the workspace come
// from PyTorch's caching allocator, the work is enqueued on PyTorch's current
// stream through one gdnrt context per device, and nothing synchronises with
// the host unless the caller asks for the packing check. It knows nothing of
// layers or the delta rule: the Python half (gdn_torch/__init__.py) gives
// the functions their meaning.
//
// It registers operators with TORCH_LIBRARY instead of being a Python
// module: it then depends on libtorch alone, not on the Python version, so
// a build made against the same torch elsewhere loads as it is
// (torch.ops.load_library).
//
//   torch.ops.gdn_torch.signature(library, name) -> int[]
//   torch.ops.gdn_torch.result_dims(library, name) -> str
//   torch.ops.gdn_torch.call(library, name, Tensor[] args, bool check, int rank) -> Tensor[]
//   torch.ops.gdn_torch.unique_id() -> int[]
//   torch.ops.gdn_torch.progress_port() -> int
//   torch.ops.gdn_torch.open_rank(device, rendezvous, unique_id, rank, size, sp_size,
//                                 timeout_ms, progress_peers) -> int
//   torch.ops.gdn_torch.close_rank(handle) -> ()
//
// A distributed program runs on a rank: open_rank makes one (a gdnrt
// context of its own, the world communicator joined through NCCL's unique
// id or a gdnrt rendezvous such as "threads:<name>", split into the SP and
// CP groups and bound to them), and `call` with that handle runs there
// (rank 0: the device's shared context, which binds no group). Joined
// through the unique id, the world gets a progress board over the network
// from `progress_peers` (every rank's "host:port", gathered by the caller
// from each rank's progress_port), so that a timed-out collective names
// the ranks that never entered it.
//
// `call` has its CUDA kernel here; its CPU kernel (the reference
// interpreter), its fake kernel (result shapes for tracers, from
// result_dims) and its autograd formula (the generated backward) are
// registered from Python (gdn_torch/ops.py), which is what torch.compile
// and CUDA graphs see.
//
//===----------------------------------------------------------------------===//

#include <ATen/ATen.h>
#include <torch/library.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "gdn/runtime/gdnrt.h"

namespace {

using WorkspaceBytesFn = size_t (*)(const gdn_tensor_t *);
using ResultShapesFn = int (*)(const gdn_tensor_t *, gdn_tensor_t *);
using ResultDimsFn = const char *(*)();
using RunFn = int (*)(const gdn_tensor_t *, gdn_tensor_t *, void *, gdnrt_context_t *);
using CheckFn = int (*)(const gdn_tensor_t *, const void *, gdnrt_context_t *, char *, size_t);

const char *dtypeName(gdn_dtype_t dtype) {
  switch (dtype) {
  case GDN_BF16: return "bf16";
  case GDN_F16: return "f16";
  case GDN_F32: return "f32";
  case GDN_F64: return "f64";
  case GDN_I32: return "i32";
  case GDN_I64: return "i64";
  }
  return "?";
}

at::ScalarType scalarType(gdn_dtype_t dtype) {
  switch (dtype) {
  case GDN_BF16: return at::kBFloat16;
  case GDN_F16: return at::kHalf;
  case GDN_F32: return at::kFloat;
  case GDN_F64: return at::kDouble;
  case GDN_I32: return at::kInt;
  case GDN_I64: return at::kLong;
  }
  TORCH_CHECK(false, "gdn_torch: unknown gdn dtype ", static_cast<int>(dtype));
  return at::kFloat;
}

const char *roleName(gdn_role_t role) {
  switch (role) {
  case GDN_ROLE_TOKENS: return "tokens";
  case GDN_ROLE_CU_SEQLENS: return "cu_seqlens";
  case GDN_ROLE_CU_PADDED: return "cu_padded";
  case GDN_ROLE_PER_SEQUENCE: return "per_sequence";
  case GDN_ROLE_PARAMETER: return "parameter";
  }
  return "?";
}

/// A gdnrt context and what it owns, used by one call at a time: a call
/// points the context at its caller's stream and runs on it, so two
/// threads must not interleave there.
struct Slot {
  int device = 0;
  gdnrt_context_t *context = nullptr;
  std::vector<gdnrt_comm_t *> comms; // a rank's: the world first, then its groups
  std::mutex use;

  Slot() = default;
  Slot(const Slot &) = delete;
  Slot &operator=(const Slot &) = delete;
  ~Slot() {
    // Sub-groups first, then the world they were split from.
    for (auto it = comms.rbegin(); it != comms.rend(); ++it)
      gdnrt_comm_destroy(*it);
    if (context)
      gdnrt_context_destroy(context);
  }
};

/// One shared context per device for functions that bind no group, made on
/// first use and kept for the process (it owns a cuBLASLt handle and its
/// 32 MiB workspace).
std::shared_ptr<Slot> deviceSlot(int device) {
  static std::mutex mutex;
  // Never destroyed: at exit the CUDA runtime may be gone before it.
  static auto &slots = *new std::map<int, std::shared_ptr<Slot>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto found = slots.find(device);
  if (found != slots.end())
    return found->second;
  auto slot = std::make_shared<Slot>();
  slot->device = device;
  int error = gdnrt_context_create(device, at::cuda::getCurrentCUDAStream(device).stream(),
                                   &slot->context);
  TORCH_CHECK(error == GDN_SUCCESS, "gdn_torch: gdnrt_context_create on device ", device,
              " failed (", gdnrt_error_name(error), "): ", gdnrt_last_error());
  slots[device] = slot;
  return slot;
}

/// The ranks of distributed programs that open_rank made: each its own
/// context with the SP and CP communicators bound. A call holds its rank's
/// slot, so close_rank cannot free it under the call.
std::mutex ranksMutex;
// Never destroyed, as deviceSlot's: ranks left open at exit are not torn
// down after the CUDA runtime.
std::map<int64_t, std::shared_ptr<Slot>> &ranks = *new std::map<int64_t, std::shared_ptr<Slot>>();
int64_t nextRank = 1;

std::shared_ptr<Slot> rankSlot(int64_t handle, c10::Device device) {
  std::lock_guard<std::mutex> lock(ranksMutex);
  auto found = ranks.find(handle);
  TORCH_CHECK(found != ranks.end(), "gdn_torch: no open rank ", handle,
              " (open_rank gives the handles; close_rank ends them)");
  TORCH_CHECK(found->second->device == device.index(), "gdn_torch: rank ", handle,
              " was opened on cuda:", found->second->device, ", the arguments are on ", device);
  return found->second;
}

/// A compiled function of a generated library.
class CompiledFunction {
public:
  CompiledFunction(const std::string &library, const std::string &name)
      : library_(library), name_(name) {
    // RTLD_GLOBAL is not needed: each library resolves gdnrt by its run path.
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    TORCH_CHECK(handle_, "gdn_torch: cannot open ", library, ": ", dlerror());
    std::string base = "gdn_" + name;
    signature_ = static_cast<const gdn_signature_t *>(dlsym(handle_, (base + "_signature").c_str()));
    workspaceBytes_ = reinterpret_cast<WorkspaceBytesFn>(dlsym(handle_, (base + "_workspace_bytes").c_str()));
    resultShapes_ = reinterpret_cast<ResultShapesFn>(dlsym(handle_, (base + "_result_shapes").c_str()));
    resultDims_ = reinterpret_cast<ResultDimsFn>(dlsym(handle_, (base + "_result_dims").c_str()));
    run_ = reinterpret_cast<RunFn>(dlsym(handle_, base.c_str()));
    check_ = reinterpret_cast<CheckFn>(dlsym(handle_, (base + "_check").c_str()));
    TORCH_CHECK(signature_ && workspaceBytes_ && resultShapes_ && run_ && check_,
                "gdn_torch: ", library, " has no whole-function entry point for @", name,
                " (gdn_", name, " and its _signature, _workspace_bytes, _result_shapes, _check): "
                "the function still holds ops without a CUDA lowering (see the comment in its .cu)");
  }

  const std::string &name() const { return name_; }

  /// The signature flattened: [num_args, num_results, then per argument
  /// (gdn_dtype_t, rank, gdn_role_t), then the same per result, then the
  /// SP and CP group sizes (0: not used)].
  std::vector<int64_t> signature() const {
    std::vector<int64_t> out = {signature_->num_args, signature_->num_results};
    for (int i = 0; i < signature_->num_args; ++i)
      out.insert(out.end(), {signature_->arg_dtypes[i], signature_->arg_ranks[i],
                             signature_->arg_roles[i]});
    for (int i = 0; i < signature_->num_results; ++i)
      out.insert(out.end(), {signature_->result_dtypes[i], signature_->result_ranks[i],
                             signature_->result_roles[i]});
    out.insert(out.end(), {signature_->sp_ranks, signature_->cp_ranks});
    return out;
  }

  /// gdn_<f>_result_dims: the result sizes as expressions of the
  /// arguments' (docs/codegen.md).
  std::string resultDims() const {
    TORCH_CHECK(resultDims_, "gdn_torch: ", library_, " has no gdn_", name_,
                "_result_dims: it was compiled by a gdn-translate older than this gdn_torch; "
                "compile it again (python -m gdn_torch compile ..., or clear the cache)");
    return resultDims_();
  }

  /// Runs the function on `args` (CUDA tensors of the signature's dtypes and
  /// ranks, on one device) and returns its results. With `check`, waits for
  /// the stream and raises on invalid packing metadata (gdn_<f>_check);
  /// without, no host synchronisation happens (invalid metadata then shows as
  /// NaN results, as docs/codegen.md describes).
  std::vector<at::Tensor> call(std::vector<at::Tensor> args, bool check, int64_t rank) const {
    TORCH_CHECK(static_cast<int>(args.size()) == signature_->num_args, "gdn_torch: @", name_,
                " takes ", signature_->num_args, " arguments, got ", args.size());
    TORCH_CHECK(!args.empty(), "gdn_torch: @", name_, " takes no arguments");
    c10::Device device = args[0].device();
    TORCH_CHECK(device.is_cuda(), "gdn_torch: @", name_, " argument #0 is on ", device,
                ", not a CUDA device");
    std::vector<gdn_tensor_t> described(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      at::Tensor &t = args[i];
      TORCH_CHECK(t.device() == device, "gdn_torch: @", name_, " argument #", i, " is on ",
                  t.device(), ", argument #0 on ", device);
      gdn_dtype_t want = signature_->arg_dtypes[i];
      TORCH_CHECK(t.scalar_type() == scalarType(want), "gdn_torch: @", name_, " argument #", i,
                  " (", roleName(signature_->arg_roles[i]), ") must be ", dtypeName(want),
                  ", found ", t.scalar_type());
      TORCH_CHECK(t.dim() == signature_->arg_ranks[i], "gdn_torch: @", name_, " argument #", i,
                  " must have rank ", signature_->arg_ranks[i], ", found shape ", t.sizes());
      // Generated code reads dense row-major tensors, 16-byte aligned where
      // it vectorises: a fresh contiguous copy is both.
      if (!t.is_contiguous() || reinterpret_cast<uintptr_t>(t.data_ptr()) % 16)
        t = t.contiguous().clone();
      described[i] = describe(t, want);
    }
    c10::cuda::CUDAGuard guard(device);
    std::vector<gdn_tensor_t> results(signature_->num_results);
    int error = resultShapes_(described.data(), results.data());
    TORCH_CHECK(error == GDN_SUCCESS, "gdn_torch: @", name_,
                " refused the arguments' shapes (gdn_", name_, "_result_shapes: ",
                gdnrt_error_name(error), ")", shapesOf(args));
    std::vector<at::Tensor> outputs;
    auto options = at::TensorOptions().device(device);
    for (gdn_tensor_t &r : results) {
      std::vector<int64_t> shape(r.shape, r.shape + r.rank);
      at::Tensor t = at::empty(shape, options.dtype(scalarType(r.dtype)));
      r.data = t.data_ptr();
      outputs.push_back(t);
    }
    size_t bytes = workspaceBytes_(described.data());
    at::Tensor workspace =
        at::empty({static_cast<int64_t>(std::max<size_t>(bytes, 256))}, options.dtype(at::kByte));
    // A distributed function needs its groups bound: a rank's context.
    TORCH_CHECK(rank != 0 || (signature_->sp_ranks <= 1 && signature_->cp_ranks <= 1),
                "gdn_torch: @", name_, " runs on SP ", std::max(signature_->sp_ranks, 1),
                " x CP ", std::max(signature_->cp_ranks, 1), " ranks: call it on a rank that open_rank made "
                "(GatedDeltaNet(..., sp_group=, cp_group=) does)");
    std::shared_ptr<Slot> slot = rank ? rankSlot(rank, device) : deviceSlot(device.index());
    std::lock_guard<std::mutex> using_(slot->use);
    gdnrt_context_t *context = slot->context;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream(device.index()).stream();
    error = gdnrt_context_set_stream(context, stream);
    TORCH_CHECK(error == GDN_SUCCESS, "gdn_torch: gdnrt_context_set_stream: ", gdnrt_last_error());
    error = run_(described.data(), results.data(), workspace.data_ptr(), context);
    if (error != GDN_SUCCESS) {
      std::string why = gdnrt_last_error();
      TORCH_CHECK(false, "gdn_torch: @", name_, " failed (", gdnrt_error_name(error), ")",
                  why.empty() ? std::string(": a generated check refused the arguments") : ": " + why,
                  shapesOf(args));
    }
    if (check) {
      char message[512] = "";
      error = check_(described.data(), workspace.data_ptr(), context, message, sizeof(message));
      TORCH_CHECK(error == GDN_SUCCESS, "gdn_torch: @", name_, ": ", message);
    }
    return outputs;
  }

private:
  static gdn_tensor_t describe(const at::Tensor &t, gdn_dtype_t dtype) {
    gdn_tensor_t d = {};
    d.data = t.data_ptr();
    d.rank = static_cast<int32_t>(t.dim());
    for (int64_t i = 0; i < t.dim(); ++i)
      d.shape[i] = t.size(i);
    d.dtype = dtype;
    return d;
  }

  static std::string shapesOf(const std::vector<at::Tensor> &args) {
    std::ostringstream os;
    os << "; argument shapes:";
    for (const at::Tensor &t : args)
      os << " " << t.sizes();
    return os.str();
  }

  std::string library_, name_;
  void *handle_ = nullptr; // kept open for the process: code may still run
  const gdn_signature_t *signature_ = nullptr;
  WorkspaceBytesFn workspaceBytes_ = nullptr;
  ResultShapesFn resultShapes_ = nullptr;
  ResultDimsFn resultDims_ = nullptr;
  RunFn run_ = nullptr;
  CheckFn check_ = nullptr;
};

/// The function `name` of `library`, opened once per process.
const CompiledFunction &functionFor(std::string_view library, std::string_view name) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<CompiledFunction>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(std::string(library), std::string(name));
  auto found = opened.find(key);
  if (found == opened.end())
    found = opened.emplace(key, std::make_unique<CompiledFunction>(key.first, key.second)).first;
  return *found->second;
}

std::vector<int64_t> signatureOp(std::string_view library, std::string_view name) {
  return functionFor(library, name).signature();
}

std::string resultDimsOp(std::string_view library, std::string_view name) {
  return functionFor(library, name).resultDims();
}

std::vector<at::Tensor> callOp(std::string_view library, std::string_view name,
                               at::TensorList args, bool check, int64_t rank) {
  return functionFor(library, name).call(args.vec(), check, rank);
}

std::vector<int64_t> uniqueIdOp() {
  gdnrt_unique_id_t id;
  int error = gdnrt_unique_id(&id);
  TORCH_CHECK(error == GDN_SUCCESS, "gdn_torch: gdnrt_unique_id: ", gdnrt_last_error());
  return std::vector<int64_t>(id.bytes, id.bytes + GDNRT_UNIQUE_ID_BYTES);
}

int64_t progressPortOp() {
  int port = 0;
  TORCH_CHECK(gdnrt_progress_port(&port) == GDN_SUCCESS,
              "gdn_torch: gdnrt_progress_port: ", gdnrt_last_error());
  return port;
}

int64_t openRankOp(int64_t device, std::string_view rendezvous, std::vector<int64_t> uniqueId,
                   int64_t rank, int64_t size, int64_t spSize, int64_t timeoutMs,
                   std::vector<std::string> progressPeers) {
  TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "gdn_torch: rank ", rank,
              " is not one of 0..", size - 1);
  TORCH_CHECK(spSize >= 1 && size % spSize == 0, "gdn_torch: an SP group of ", spSize,
              " does not divide ", size, " ranks");
  TORCH_CHECK(!rendezvous.empty() || uniqueId.size() == GDNRT_UNIQUE_ID_BYTES,
              "gdn_torch: a unique id has ", GDNRT_UNIQUE_ID_BYTES, " bytes, got ",
              uniqueId.size());
  auto r = std::make_shared<Slot>(); // frees what it holds if this throws
  r->device = static_cast<int>(device);
  c10::cuda::CUDAGuard guard(r->device);
  auto fail = [&](const char *what) {
    TORCH_CHECK(false, "gdn_torch: rank ", rank, " of ", size, ": ", what, ": ",
                gdnrt_last_error());
  };
  if (gdnrt_context_create(r->device, at::cuda::getCurrentCUDAStream(r->device).stream(),
                           &r->context) != GDN_SUCCESS)
    fail("gdnrt_context_create");
  if (timeoutMs > 0 && gdnrt_context_set_timeout(r->context, timeoutMs) != GDN_SUCCESS)
    fail("gdnrt_context_set_timeout");
  gdnrt_comm_t *world = nullptr;
  int error;
  if (!rendezvous.empty()) {
    std::string where(rendezvous);
    error = gdnrt_comm_bootstrap(r->context, where.c_str(), static_cast<int>(rank),
                                 static_cast<int>(size), &world);
  } else {
    gdnrt_unique_id_t id;
    for (size_t i = 0; i < uniqueId.size(); ++i)
      id.bytes[i] = static_cast<char>(uniqueId[i]);
    error = gdnrt_comm_init(r->context, &id, static_cast<int>(rank), static_cast<int>(size),
                            &world);
  }
  if (error != GDN_SUCCESS)
    fail("joining the communicator");
  r->comms.push_back(world);
  if (rendezvous.empty() && !progressPeers.empty()) {
    std::vector<const char *> peers;
    for (const std::string &peer : progressPeers)
      peers.push_back(peer.c_str());
    // Diagnostics only: without the board a timeout names the collective
    // but not the missing ranks.
    if (gdnrt_comm_set_progress_peers(world, peers.data(), static_cast<int>(peers.size())) !=
        GDN_SUCCESS)
      TORCH_WARN("gdn_torch: rank ", rank, " of ", size,
                 ": no progress board, so a timed-out collective will not name the "
                 "missing ranks: ",
                 gdnrt_last_error());
  }
  gdnrt_comm_t *sp = spSize > 1 ? world : nullptr;
  gdnrt_comm_t *cp = size / spSize > 1 ? world : nullptr;
  if (sp && cp) {
    if (gdnrt_comm_split_grid(world, static_cast<int>(spSize), &sp, &cp) != GDN_SUCCESS)
      fail("gdnrt_comm_split_grid");
    r->comms.push_back(sp);
    r->comms.push_back(cp);
  }
  if ((sp && gdnrt_context_bind(r->context, GDNRT_GROUP_SP, sp) != GDN_SUCCESS) ||
      (cp && gdnrt_context_bind(r->context, GDNRT_GROUP_CP, cp) != GDN_SUCCESS))
    fail("gdnrt_context_bind");
  std::lock_guard<std::mutex> lock(ranksMutex);
  int64_t handle = nextRank++;
  ranks.emplace(handle, std::move(r));
  return handle;
}

/// Forgets the rank; its communicators and context go once no call holds
/// it any more.
void closeRankOp(int64_t handle) {
  std::shared_ptr<Slot> r;
  {
    std::lock_guard<std::mutex> lock(ranksMutex);
    auto found = ranks.find(handle);
    TORCH_CHECK(found != ranks.end(), "gdn_torch: no open rank ", handle);
    r = std::move(found->second);
    ranks.erase(found);
  }
  std::lock_guard<std::mutex> waiting(r->use); // a call in flight ends first
}

} // namespace

TORCH_LIBRARY(gdn_torch, m) {
  m.def("signature(str library, str name) -> int[]", &signatureOp);
  m.def("result_dims(str library, str name) -> str", &resultDimsOp);
  // No kernel here but CUDA's: the other keys come from gdn_torch/ops.py.
  // rank has no default: the dispatcher drops arguments equal to their
  // defaults, which would change what the autograd formula is handed.
  m.def("call(str library, str name, Tensor[] args, bool check, int rank) -> Tensor[]");
  m.def("unique_id() -> int[]", &uniqueIdOp);
  m.def("progress_port() -> int", &progressPortOp);
  m.def("open_rank(int device, str rendezvous, int[] unique_id, int rank, int size, int sp_size, "
        "int timeout_ms, str[] progress_peers) -> int",
        &openRankOp);
  m.def("close_rank(int handle) -> ()", &closeRankOp);
}

TORCH_LIBRARY_IMPL(gdn_torch, CUDA, m) { m.impl("call", &callOp); }
