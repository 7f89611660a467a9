//===- GpuTest.cpp - gdnrt on a real GPU, NCCL and cuBLASLt ---------------===//
//
// Needs a GPU (lit: REQUIRES: cuda; utils/gdnrt-gpu-run.sh on the H200).
//  - OneRank.*: every collective (and every transposed one) on an NCCL
//    communicator of one rank, the executor's copies and GEMMs against the
//    host, gdnrt_linear and gdnrt_linear_grad (both forms, no tokens, no
//    outputs, the same bits on every run) against host GEMMs, communicators
//    made every way, and the error paths: an unreachable peer times out, a
//    failed NCCL call names itself and aborts the communicator, a wrapped
//    communicator is left to its owner, and the collective a timed-out wait
//    is stuck in is the first whose event has not fired
//    (PendingCollectives.h).
//  - Threads.*: P = 1..4 ranks as threads of this process on device 0 (the
//    threads backend): every collective against CollectiveReference.h,
//    all_reduce bit-identical across ranks and runs (bf16, f16, f32, f64),
//    stream order on the sending and the receiving side, the grid split,
//    gdnrt_run_ranks (under gdnrt-launch --threads or processes too), ranks
//    spread over the GPUs, and the failures: a missing rank times out named,
//    a destroyed communicator fails the others at once, bootstrap names the
//    missing rank and refuses another size.
//  - MultiRank.*: run under `gdnrt-launch -n P` on P GPUs (skipped
//    otherwise): every collective and transposed collective against
//    CollectiveReference.h.
//  - `--benchmark` (not a test): gdnrt_linear against cuBLASLt called
//    directly on the example layers' projection shapes.
//
//===----------------------------------------------------------------------===//

#include "CollectiveReference.h"
#include "Executor.h"
#include "Internal.h"
#include "PendingCollectives.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

using namespace gdnrt;
using gdnrt::reference::Tensor;

namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call
#define GDN_OK(call) ASSERT_EQ((call), GDN_SUCCESS) << gdnrt_last_error()

/// A device buffer that frees itself.
struct DeviceBuffer {
  void *data = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t size) : bytes(size) {
    if (size)
      cudaMalloc(&data, size);
  }
  ~DeviceBuffer() { cudaFree(data); }
  void upload(const void *host) {
    if (bytes) // empty tensors have no memory
      cudaMemcpy(data, host, bytes, cudaMemcpyHostToDevice);
  }
  template <typename T> std::vector<T> download() const {
    std::vector<T> host(bytes / sizeof(T));
    if (bytes)
      cudaMemcpy(host.data(), data, bytes, cudaMemcpyDeviceToHost);
    return host;
  }
};

gdn_tensor_t describe(const DeviceBuffer &buffer, std::vector<int64_t> shape,
                      gdn_dtype_t dtype) {
  gdn_tensor_t t{};
  t.data = buffer.data;
  t.rank = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  for (size_t d = 0; d < shape.size(); ++d)
    t.shape[d] = shape[d];
  return t;
}

Tensor randomTensor(std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  Tensor t(std::move(shape));
  for (double &x : t.data)
    x = uniform(rng);
  return t;
}

/// A tensor on the device, f64.
struct DeviceTensor {
  Tensor host;
  DeviceBuffer buffer;
  explicit DeviceTensor(Tensor t)
      : host(std::move(t)), buffer(host.data.size() * sizeof(double)) {
    buffer.upload(host.data.data());
  }
  explicit DeviceTensor(std::vector<int64_t> shape)
      : host(std::move(shape)), buffer(host.data.size() * sizeof(double)) {
    // Garbage, so that an output the call forgets to write shows.
    if (buffer.bytes)
      cudaMemset(buffer.data, 0x7f, buffer.bytes);
  }
  gdn_tensor_t tensor() const { return describe(buffer, host.shape, GDN_F64); }
  Tensor fetch() const {
    Tensor t(host.shape);
    auto values = buffer.download<double>();
    std::copy(values.begin(), values.end(), t.data.begin());
    return t;
  }
};

void expectNear(const Tensor &expected, const Tensor &actual, double tolerance,
                const std::string &where) {
  ASSERT_EQ(expected.shape, actual.shape) << where;
  for (size_t i = 0; i < expected.data.size(); ++i)
    ASSERT_NEAR(expected.data[i], actual.data[i],
                tolerance * (1 + std::abs(expected.data[i])))
        << where << " at " << i;
}

/// The context, stream and communicator every test gets.
class Runtime : public ::testing::Test {
protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
      GTEST_SKIP() << "no CUDA device";
    device = 0;
    if (const char *local = std::getenv("GDNRT_LOCAL_RANK"))
      device = std::atoi(local) % devices;
    CUDA_OK(cudaSetDevice(device));
    CUDA_OK(cudaStreamCreate(&stream));
    GDN_OK(gdnrt_context_create(device, stream, &context));
  }
  void TearDown() override {
    if (comm)
      gdnrt_comm_destroy(comm);
    if (context)
      gdnrt_context_destroy(context);
    if (stream)
      cudaStreamDestroy(stream);
  }
  void makeOneRankComm() {
    gdnrt_unique_id_t id;
    ASSERT_EQ(gdnrt_unique_id(&id), GDN_SUCCESS) << gdnrt_last_error();
    ASSERT_EQ(gdnrt_comm_init(context, &id, 0, 1, &comm), GDN_SUCCESS)
        << gdnrt_last_error();
    ASSERT_EQ(gdnrt_context_bind(context, GDNRT_GROUP_CP, comm), GDN_SUCCESS);
    ASSERT_EQ(gdnrt_context_bind(context, GDNRT_GROUP_SP, comm), GDN_SUCCESS);
  }
  void sync() {
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }

  int device = 0;
  cudaStream_t stream = nullptr;
  gdnrt_context_t *context = nullptr;
  gdnrt_comm_t *comm = nullptr;
};

using OneRank = Runtime;

TEST_F(OneRank, EveryCollectiveOnOneRank) {
  makeOneRankComm();
  DeviceTensor x(randomTensor({3, 4, 5}, 1));
  for (int dim : {0, 1, 2}) {
    for (gdnrt_group_t group : {GDNRT_GROUP_SP, GDNRT_GROUP_CP}) {
      DeviceTensor gathered({3, 4, 5});
      gdn_tensor_t in = x.tensor(), out = gathered.tensor();
      DeviceBuffer workspace(gdnrt_all_gather_workspace_bytes(&in, 1, dim));
      GDN_OK(gdnrt_all_gather(context, group, 1, &in, &out, dim,
                              workspace.data));
      DeviceTensor scattered({3, 4, 5});
      gdn_tensor_t sc = scattered.tensor();
      DeviceBuffer rsWorkspace(gdnrt_reduce_scatter_workspace_bytes(&in, 1, dim));
      GDN_OK(gdnrt_reduce_scatter(context, group, 1, &in, &sc, dim,
                                  rsWorkspace.data));
      DeviceTensor shard({3, 4, 5});
      gdn_tensor_t sh = shard.tensor();
      GDN_OK(gdnrt_local_shard(context, group, 1, &in, &sh, dim));
      sync();
      expectNear(x.host, gathered.fetch(), 0, "all_gather");
      expectNear(x.host, scattered.fetch(), 0, "reduce_scatter");
      expectNear(x.host, shard.fetch(), 0, "local_shard");
    }
    for (int concatDim : {0, 1, 2}) {
      DeviceTensor exchanged({3, 4, 5});
      gdn_tensor_t in = x.tensor(), out = exchanged.tensor();
      DeviceBuffer workspace(
          gdnrt_all_to_all_workspace_bytes(&in, 1, dim, concatDim));
      GDN_OK(gdnrt_all_to_all(context, GDNRT_GROUP_CP, 1, &in, &out, dim,
                              concatDim, workspace.data));
      sync();
      expectNear(x.host, exchanged.fetch(), 0, "all_to_all");
    }
  }
  // One rank: the halo is all before the buffer (zeros), and so is the
  // incoming state.
  DeviceTensor halo({3, 4, 5});
  gdn_tensor_t in = x.tensor(), h = halo.tensor();
  GDN_OK(gdnrt_halo_exchange(context, GDNRT_GROUP_CP, 1, &in, &h));
  for (gdnrt_chain_t chain : {GDNRT_CHAIN_ALL_GATHER, GDNRT_CHAIN_SCAN}) {
    DeviceTensor m(randomTensor({2, 4, 4}, 2)), s(randomTensor({2, 4, 3}, 3));
    DeviceTensor incoming({2, 4, 3});
    gdn_tensor_t mt = m.tensor(), st = s.tensor(), it = incoming.tensor();
    DeviceBuffer workspace(gdnrt_state_exchange_workspace_bytes(&st, 1, chain));
    GDN_OK(gdnrt_state_exchange(context, GDNRT_GROUP_CP, 1, &mt, &st, &it,
                                chain, workspace.data));
    sync();
    expectNear(Tensor({2, 4, 3}), incoming.fetch(), 0, "state_exchange");
  }
  sync();
  expectNear(Tensor({3, 4, 5}), halo.fetch(), 0, "halo");
  GDN_OK(gdnrt_comm_wait(comm, context));
}

TEST_F(OneRank, EveryTransposedCollectiveOnOneRank) {
  // One rank: the sum over the group is the input, this rank's block is
  // the whole unsharded tensor, the halo goes nowhere (before the buffer)
  // and nothing after the rank reads its state summary.
  makeOneRankComm();
  DeviceTensor x(randomTensor({3, 4, 5}, 11));
  gdn_tensor_t in = x.tensor();
  DeviceTensor reduced({3, 4, 5}), inPlace(x.host);
  gdn_tensor_t r = reduced.tensor(), ip = inPlace.tensor();
  DeviceBuffer workspace(gdnrt_all_reduce_workspace_bytes(&in, 1));
  GDN_OK(gdnrt_all_reduce(context, GDNRT_GROUP_CP, 1, &in, &r, workspace.data));
  GDN_OK(gdnrt_all_reduce(context, GDNRT_GROUP_SP, 1, &ip, &ip, nullptr));
  for (int dim : {0, 1, 2}) {
    DeviceTensor unsharded({3, 4, 5});
    gdn_tensor_t u = unsharded.tensor();
    GDN_OK(gdnrt_local_unshard(context, GDNRT_GROUP_CP, 1, &in, &u, dim));
    sync();
    expectNear(x.host, unsharded.fetch(), 0, "local_unshard");
  }
  DeviceTensor partial({3, 4, 5});
  gdn_tensor_t pt = partial.tensor();
  GDN_OK(gdnrt_replicated_to_partial(context, GDNRT_GROUP_CP, 1, &in, &pt));
  DeviceTensor haloGrad(randomTensor({2, 4, 5}, 12)), returned({3, 4, 5});
  gdn_tensor_t hg = haloGrad.tensor(), rt = returned.tensor();
  DeviceBuffer haloWorkspace(gdnrt_return_halo_workspace_bytes(&hg, &in, 1));
  GDN_OK(gdnrt_return_halo(context, GDNRT_GROUP_CP, 1, &hg, &in, &rt,
                           haloWorkspace.data));
  for (gdnrt_chain_t chain : {GDNRT_CHAIN_ALL_GATHER, GDNRT_CHAIN_SCAN}) {
    DeviceTensor m(randomTensor({2, 4, 4}, 13)), s(randomTensor({2, 4, 3}, 14)),
        d(randomTensor({2, 4, 3}, 15)), dm({2, 4, 4}), ds({2, 4, 3});
    gdn_tensor_t mt = m.tensor(), st = s.tensor(), dt = d.tensor(),
                 dmt = dm.tensor(), dst = ds.tensor();
    DeviceBuffer chainWorkspace(
        gdnrt_reverse_state_exchange_workspace_bytes(&st, 1, chain));
    GDN_OK(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 1, &dt, &mt,
                                        &st, &dmt, &dst, chain,
                                        chainWorkspace.data));
    sync();
    expectNear(Tensor({2, 4, 4}), dm.fetch(), 0, "transition_grad");
    expectNear(Tensor({2, 4, 3}), ds.fetch(), 0, "partial_grad");
  }
  sync();
  expectNear(x.host, reduced.fetch(), 0, "all_reduce");
  expectNear(x.host, inPlace.fetch(), 0, "all_reduce in place");
  expectNear(x.host, partial.fetch(), 0, "replicated_to_partial");
  expectNear(x.host, returned.fetch(), 0, "return_halo");
  GDN_OK(gdnrt_comm_wait(comm, context));
}

TEST_F(OneRank, ExecutorCopiesAndGemmsMatchTheHost) {
  // The step kinds that need more than one rank to appear in a real plan,
  // run here alone: pitched copies, memsets and batched GEMMs (f32, f64,
  // with and without accumulation) as the state chain issues them.
  for (gdn_dtype_t dtype : {GDN_F32, GDN_F64})
    for (bool accumulate : {false, true}) {
      const int64_t batch = 3, m = 5, n = 7, k = 4;
      Tensor a = randomTensor({batch, m, k}, 4), b = randomTensor({batch, k, n}, 5),
             c = randomTensor({batch, m, n}, 6);
      auto toDevice = [&](const Tensor &t) {
        auto buffer = std::make_unique<DeviceBuffer>(
            t.data.size() * (dtype == GDN_F64 ? 8 : 4));
        if (dtype == GDN_F64) {
          buffer->upload(t.data.data());
        } else {
          std::vector<float> f(t.data.begin(), t.data.end());
          buffer->upload(f.data());
        }
        return buffer;
      };
      auto da = toDevice(a), db = toDevice(b), dc = toDevice(c);
      DeviceBuffer dd(batch * m * n * (dtype == GDN_F64 ? 8 : 4));
      Plan plan;
      plan.gemm({{Buffer::Input, 0}, {Buffer::Input2, 0}, {Buffer::Workspace, 0},
                 {Buffer::Output, 0}, m, n, k, batch,
                 static_cast<size_t>(m * k), static_cast<size_t>(k * n),
                 static_cast<size_t>(m * n), static_cast<size_t>(m * n),
                 accumulate, dtype});
      Buffers buffers{da->data, db->data, dd.data, dc->data};
      GDN_OK(execute(plan, context, nullptr, buffers, "test"));
      sync();
      std::vector<double> got;
      if (dtype == GDN_F64) {
        got = dd.download<double>();
      } else {
        auto f = dd.download<float>();
        got.assign(f.begin(), f.end());
      }
      for (int64_t z = 0; z < batch; ++z)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = accumulate ? c.data[(z * m + i) * n + j] : 0;
            for (int64_t l = 0; l < k; ++l)
              want += a.data[(z * m + i) * k + l] * b.data[(z * k + l) * n + j];
            ASSERT_NEAR(got[(z * m + i) * n + j], want,
                        dtype == GDN_F64 ? 1e-12 : 1e-5)
                << "batch " << z << " (" << i << ", " << j << ")";
          }
    }
  // A pitched copy (3 rows of 16 bytes out of 40-byte rows) and a memset.
  std::vector<char> source(120);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<char>(i);
  DeviceBuffer from(120), to(64);
  from.upload(source.data());
  cudaMemset(to.data, 0x11, 64);
  Plan plan;
  plan.copy({Buffer::Output, 8}, 16, {Buffer::Input, 4}, 40, 16, 3);
  plan.zero({Buffer::Output, 56}, 8);
  GDN_OK(execute(plan, context, nullptr, {from.data, nullptr, to.data, nullptr},
                 "test"));
  sync();
  auto result = to.download<char>();
  for (int i = 0; i < 64; ++i) {
    char want = 0x11;
    if (i >= 8 && i < 56)
      want = source[4 + ((i - 8) / 16) * 40 + (i - 8) % 16];
    if (i >= 56)
      want = 0;
    ASSERT_EQ(result[i], want) << "byte " << i;
  }
}

uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST_F(OneRank, LinearMatchesAHostGemm) {
  // x [T, 4, 16] (per-head input), W [96, 64], y [T, 96]: bf16 in and out,
  // fp32 accumulation; the tolerance is the bf16 rounding of y.
  for (int64_t tokens : {int64_t(37), int64_t(1), int64_t(0)}) {
    const int64_t in = 64, out = 96;
    Tensor x = randomTensor({std::max<int64_t>(tokens, 1), in}, 7);
    Tensor w = randomTensor({out, in}, 8);
    std::vector<uint16_t> xb, wb;
    for (double v : x.data)
      xb.push_back(toBf16(static_cast<float>(v)));
    for (double v : w.data)
      wb.push_back(toBf16(static_cast<float>(v)));
    DeviceBuffer dx(xb.size() * 2), dw(wb.size() * 2),
        dy(std::max<int64_t>(tokens, 1) * out * 2);
    dx.upload(xb.data());
    dw.upload(wb.data());
    gdn_tensor_t tx = describe(dx, {tokens, 4, 16}, GDN_BF16),
                 tw = describe(dw, {out, in}, GDN_BF16),
                 ty = describe(dy, {tokens, out}, GDN_BF16);
    GDN_OK(gdnrt_linear(context, &tx, &tw, &ty));
    sync();
    auto y = dy.download<uint16_t>();
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t o = 0; o < out; ++o) {
        double want = 0;
        for (int64_t i = 0; i < in; ++i)
          want += double(fromBf16(xb[t * in + i])) * fromBf16(wb[o * in + i]);
        ASSERT_NEAR(fromBf16(y[t * out + o]), want, 8e-3 * (1 + std::abs(want)))
            << "token " << t << " output " << o;
      }
  }
}

/// bf16 values of uniform(-1, 1) draws, and a device copy of them.
struct Bf16Tensor {
  std::vector<uint16_t> host;
  DeviceBuffer device;
  Bf16Tensor(int64_t elements, unsigned seed)
      : host(random(elements, seed)),
        device(std::max<int64_t>(elements, 1) * 2) {
    if (elements > 0)
      device.upload(host.data());
  }
  static std::vector<uint16_t> random(int64_t elements, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<uint16_t> values(elements);
    for (uint16_t &v : values)
      v = toBf16(uniform(rng));
    return values;
  }
  double at(int64_t i) const { return fromBf16(host[i]); }
};

TEST_F(OneRank, LinearGradMatchesAHostGemm) {
  // out_proj's shape class (x [T, 4, 16] per head) and a 2-D x; T = 0 must
  // zero dW; the accumulating form adds dx onto what the buffer held. The
  // tolerance is the bf16 rounding of the results.
  const int64_t in = 64, out = 96;
  for (bool perHead : {true, false})
    for (int64_t tokens : {int64_t(37), int64_t(1), int64_t(0)})
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE("tokens " + std::to_string(tokens) +
                     (perHead ? " x [T, 4, 16]" : " x [T, 64]") +
                     (accumulate ? " accumulating" : ""));
        Bf16Tensor x(tokens * in, 11), w(out * in, 12), dy(tokens * out, 13),
            before(tokens * in, 14);
        DeviceBuffer dx(std::max<int64_t>(tokens, 1) * in * 2),
            dw(out * in * 2);
        if (tokens > 0)
          dx.upload(before.host.data());
        CUDA_OK(cudaMemset(dw.data, 0x7f, dw.bytes)); // garbage to overwrite
        std::vector<int64_t> xShape = perHead
                                          ? std::vector<int64_t>{tokens, 4, 16}
                                          : std::vector<int64_t>{tokens, in};
        gdn_tensor_t tdy = describe(dy.device, {tokens, out}, GDN_BF16),
                     tx = describe(x.device, xShape, GDN_BF16),
                     tw = describe(w.device, {out, in}, GDN_BF16),
                     tdx = describe(dx, xShape, GDN_BF16),
                     tdw = describe(dw, {out, in}, GDN_BF16);
        GDN_OK((accumulate ? gdnrt_linear_grad_accumulate : gdnrt_linear_grad)(
            context, &tdy, &tx, &tw, &tdx, &tdw));
        sync();
        auto gotDx = dx.download<uint16_t>();
        auto gotDw = dw.download<uint16_t>();
        for (int64_t t = 0; t < tokens; ++t)
          for (int64_t i = 0; i < in; ++i) {
            double want = accumulate ? before.at(t * in + i) : 0.0;
            for (int64_t o = 0; o < out; ++o)
              want += dy.at(t * out + o) * w.at(o * in + i);
            ASSERT_NEAR(fromBf16(gotDx[t * in + i]), want,
                        8e-3 * (1 + std::abs(want)))
                << "dx token " << t << " feature " << i;
          }
        for (int64_t o = 0; o < out; ++o)
          for (int64_t i = 0; i < in; ++i) {
            double want = 0;
            for (int64_t t = 0; t < tokens; ++t)
              want += dy.at(t * out + o) * x.at(t * in + i);
            if (tokens == 0) { // exactly zero, not merely small
              ASSERT_EQ(gotDw[o * in + i], 0) << "dW output " << o;
            }
            ASSERT_NEAR(fromBf16(gotDw[o * in + i]), want,
                        8e-3 * (1 + std::abs(want)))
                << "dW output " << o << " feature " << i;
          }
      }
}

TEST_F(OneRank, LinearGradWithoutOutputs) {
  // Out = 0: dx is a sum over nothing, zero (kept when accumulating); dW is
  // empty.
  const int64_t tokens = 5, in = 8;
  Bf16Tensor x(tokens * in, 21), before(tokens * in, 22);
  DeviceBuffer dx(tokens * in * 2), dy(2), w(2), dw(2);
  for (bool accumulate : {true, false}) {
    dx.upload(before.host.data());
    gdn_tensor_t tdy = describe(dy, {tokens, 0}, GDN_BF16),
                 tx = describe(x.device, {tokens, in}, GDN_BF16),
                 tw = describe(w, {0, in}, GDN_BF16),
                 tdx = describe(dx, {tokens, in}, GDN_BF16),
                 tdw = describe(dw, {0, in}, GDN_BF16);
    GDN_OK((accumulate ? gdnrt_linear_grad_accumulate : gdnrt_linear_grad)(
        context, &tdy, &tx, &tw, &tdx, &tdw));
    sync();
    auto got = dx.download<uint16_t>();
    for (int64_t i = 0; i < tokens * in; ++i)
      ASSERT_EQ(got[i], accumulate ? before.host[i] : 0) << "element " << i;
  }
}

TEST_F(OneRank, LinearGradIsBitIdenticalRunToRun) {
  // Many tokens and few features: the weight gradient's token sum is where
  // cuBLASLt splits K. Three runs, the same bits.
  const int64_t tokens = 8195, in = 64, out = 48;
  Bf16Tensor x(tokens * in, 31), w(out * in, 32), dy(tokens * out, 33);
  DeviceBuffer dx(tokens * in * 2), dw(out * in * 2);
  gdn_tensor_t tdy = describe(dy.device, {tokens, out}, GDN_BF16),
               tx = describe(x.device, {tokens, in}, GDN_BF16),
               tw = describe(w.device, {out, in}, GDN_BF16),
               tdx = describe(dx, {tokens, in}, GDN_BF16),
               tdw = describe(dw, {out, in}, GDN_BF16);
  std::vector<uint16_t> firstDx, firstDw;
  for (int run = 0; run < 3; ++run) {
    CUDA_OK(cudaMemset(dx.data, 0x7f, dx.bytes));
    CUDA_OK(cudaMemset(dw.data, 0x7f, dw.bytes));
    GDN_OK(gdnrt_linear_grad(context, &tdy, &tx, &tw, &tdx, &tdw));
    sync();
    auto gotDx = dx.download<uint16_t>();
    auto gotDw = dw.download<uint16_t>();
    if (run == 0) {
      firstDx = gotDx;
      firstDw = gotDw;
      continue;
    }
    ASSERT_EQ(gotDx, firstDx) << "run " << run;
    ASSERT_EQ(gotDw, firstDw) << "run " << run;
  }
}

TEST_F(OneRank, LinearGradHalvesEqualTheWholeCall) {
  // gdnrt_linear_data_grad then gdnrt_linear_weight_grad write the bits of
  // one gdnrt_linear_grad: the same GEMMs, run one at a time.
  const int64_t tokens = 1000, in = 64, out = 48;
  Bf16Tensor x(tokens * in, 41), w(out * in, 42), dy(tokens * out, 43);
  DeviceBuffer dx(tokens * in * 2), dw(out * in * 2), dx2(tokens * in * 2),
      dw2(out * in * 2);
  gdn_tensor_t tdy = describe(dy.device, {tokens, out}, GDN_BF16),
               tx = describe(x.device, {tokens, in}, GDN_BF16),
               tw = describe(w.device, {out, in}, GDN_BF16),
               tdx = describe(dx, {tokens, in}, GDN_BF16),
               tdw = describe(dw, {out, in}, GDN_BF16),
               tdx2 = describe(dx2, {tokens, in}, GDN_BF16),
               tdw2 = describe(dw2, {out, in}, GDN_BF16);
  for (DeviceBuffer *buffer : {&dx, &dw, &dx2, &dw2})
    CUDA_OK(cudaMemset(buffer->data, 0x7f, buffer->bytes));
  GDN_OK(gdnrt_linear_grad(context, &tdy, &tx, &tw, &tdx, &tdw));
  GDN_OK(gdnrt_linear_data_grad(context, &tdy, &tw, &tdx2));
  GDN_OK(gdnrt_linear_weight_grad(context, &tdy, &tx, &tdw2));
  sync();
  EXPECT_EQ(dx2.download<uint16_t>(), dx.download<uint16_t>());
  EXPECT_EQ(dw2.download<uint16_t>(), dw.download<uint16_t>());
}

TEST_F(OneRank, ProjectionRowsAreTheSameBitsInAPackAndAlone) {
  // A pack's rows of y = x W^T and of dx = dy W equal each sequence's run
  // alone, bit for bit: the GEMM's algorithm must not follow the token
  // count. The shapes are a small Qwen3-Next layer's split projections
  // (out = 4 is b's and a's, whose dx the heuristic otherwise computes
  // another way for short sequences) and the accumulating form adds one
  // projection's dx onto another's, as the generated backward does.
  const int64_t lengths[] = {1, 63, 64, 65, 130, 2};
  int64_t tokens = 0;
  for (int64_t length : lengths)
    tokens += length;
  const int64_t in = 256;
  for (int64_t out : {int64_t(4), int64_t(512), int64_t(1024)}) {
    SCOPED_TRACE("out " + std::to_string(out));
    Bf16Tensor x(tokens * in, 41), w(out * in, 42), dy(tokens * out, 43),
        w2(out * in, 44), dy2(tokens * out, 45);
    // y, then dx of two projections summed, of the rows
    // [begin, begin + length).
    using Rows = std::vector<uint16_t>;
    auto run = [&](int64_t begin, int64_t length, Rows &gotY, Rows &gotDx) {
      DeviceBuffer y(std::max<int64_t>(length, 1) * out * 2),
          dx(std::max<int64_t>(length, 1) * in * 2), dw(out * in * 2);
      auto rows = [&](const Bf16Tensor &t, int64_t width) {
        return static_cast<const void *>(
            static_cast<const char *>(t.device.data) + begin * width * 2);
      };
      // Alone, the rows are copied to buffers of their own (a sequence's
      // own tensors start aligned).
      DeviceBuffer ownX(std::max<int64_t>(length, 1) * in * 2),
          ownDy(std::max<int64_t>(length, 1) * out * 2),
          ownDy2(std::max<int64_t>(length, 1) * out * 2);
      CUDA_OK(cudaMemcpy(ownX.data, rows(x, in), length * in * 2,
                         cudaMemcpyDeviceToDevice));
      CUDA_OK(cudaMemcpy(ownDy.data, rows(dy, out), length * out * 2,
                         cudaMemcpyDeviceToDevice));
      CUDA_OK(cudaMemcpy(ownDy2.data, rows(dy2, out), length * out * 2,
                         cudaMemcpyDeviceToDevice));
      gdn_tensor_t tx = describe(ownX, {length, in}, GDN_BF16),
                   tw = describe(w.device, {out, in}, GDN_BF16),
                   tw2 = describe(w2.device, {out, in}, GDN_BF16),
                   ty = describe(y, {length, out}, GDN_BF16),
                   tdy = describe(ownDy, {length, out}, GDN_BF16),
                   tdy2 = describe(ownDy2, {length, out}, GDN_BF16),
                   tdx = describe(dx, {length, in}, GDN_BF16),
                   tdw = describe(dw, {out, in}, GDN_BF16);
      GDN_OK(gdnrt_linear(context, &tx, &tw, &ty));
      GDN_OK(gdnrt_linear_grad(context, &tdy, &tx, &tw, &tdx, &tdw));
      GDN_OK(gdnrt_linear_grad_accumulate(context, &tdy2, &tx, &tw2, &tdx,
                                          &tdw));
      sync();
      gotY = y.download<uint16_t>();
      gotDx = dx.download<uint16_t>();
    };
    Rows packedY, packedDx, aloneY, aloneDx;
    run(0, tokens, packedY, packedDx);
    int64_t begin = 0;
    for (int64_t length : lengths) {
      run(begin, length, aloneY, aloneDx);
      for (int64_t i = 0; i < length * out; ++i)
        ASSERT_EQ(aloneY[i], packedY[begin * out + i])
            << "y of the sequence of " << length << " tokens at " << begin
            << ", element " << i;
      for (int64_t i = 0; i < length * in; ++i)
        ASSERT_EQ(aloneDx[i], packedDx[begin * in + i])
            << "dx of the sequence of " << length << " tokens at " << begin
            << ", element " << i;
      begin += length;
    }
  }
}

TEST_F(OneRank, CommunicatorsEveryWay) {
  // From the environment (gdnrt-launch -n 1 sets it), a one-rank rendezvous
  // of each kind, and a framework's communicator wrapped.
  for (const char *rendezvous :
       {"file:/nonexistent/unused", "tcp:127.0.0.1:1"}) {
    gdnrt_comm_t *made = nullptr;
    GDN_OK(gdnrt_comm_bootstrap(context, rendezvous, 0, 1, &made));
    EXPECT_EQ(gdnrt_comm_size(made), 1);
    GDN_OK(gdnrt_comm_destroy(made));
  }
  if (std::getenv("GDNRT_WORLD_SIZE") &&
      std::string(std::getenv("GDNRT_WORLD_SIZE")) == "1") {
    gdnrt_comm_t *made = nullptr;
    GDN_OK(gdnrt_comm_from_environment(context, &made));
    EXPECT_EQ(gdnrt_comm_rank(made), 0);
    GDN_OK(gdnrt_comm_destroy(made));
  }
  ncclComm_t framework = nullptr;
  int devices[] = {device};
  ASSERT_EQ(ncclCommInitAll(&framework, 1, devices), ncclSuccess);
  gdnrt_comm_t *wrapped = nullptr;
  GDN_OK(gdnrt_comm_wrap(context, framework, &wrapped));
  EXPECT_EQ(gdnrt_comm_nccl(wrapped), framework);
  GDN_OK(gdnrt_context_bind(context, GDNRT_GROUP_CP, wrapped));
  DeviceTensor x(randomTensor({4, 2}, 9)), y({4, 2});
  gdn_tensor_t in = x.tensor(), out = y.tensor();
  GDN_OK(gdnrt_all_gather(context, GDNRT_GROUP_CP, 1, &in, &out, 0, nullptr));
  sync();
  expectNear(x.host, y.fetch(), 0, "wrapped all_gather");
  GDN_OK(gdnrt_comm_destroy(wrapped));
  // Still the framework's: it can use and destroy it.
  EXPECT_EQ(ncclCommDestroy(framework), ncclSuccess);
}

TEST_F(OneRank, UnreachablePeerTimesOut) {
  GDN_OK(gdnrt_context_set_timeout(context, 2000));
  gdnrt_unique_id_t id;
  GDN_OK(gdnrt_unique_id(&id));
  const auto start = std::chrono::steady_clock::now();
  gdnrt_comm_t *lonely = nullptr;
  EXPECT_EQ(gdnrt_comm_init(context, &id, 0, 2, &lonely), GDN_ERROR_TIMEOUT);
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  EXPECT_LT(seconds, 15.0);
  EXPECT_EQ(lonely, nullptr);
  EXPECT_NE(std::string(gdnrt_last_error())
                .find("rank 0 of 2: ncclCommInitRankConfig (joining the other "
                      "ranks) did not complete within 2000 ms"),
            std::string::npos)
      << gdnrt_last_error();
  std::printf("unreachable peer: error after %.2f s: %s\n", seconds,
              gdnrt_last_error());
}

TEST_F(OneRank, FailedNcclCallNamesItselfAndAbortsTheCommunicator) {
  makeOneRankComm();
  DeviceBuffer bytes(64);
  Plan plan;
  plan.communicate().messages.push_back(
      {Message::Send, {Buffer::Input, 0}, {}, 64, /*peer=*/3});
  EXPECT_EQ(execute(plan, context, comm, {bytes.data, nullptr, nullptr, nullptr},
                    "test"),
            GDN_ERROR_NCCL);
  const std::string message = gdnrt_last_error();
  std::printf("failed NCCL call: %s\n", message.c_str());
  // NCCL reports the bad peer at the send or when the group ends.
  EXPECT_TRUE(message.find("ncclSend to rank 3 failed: invalid argument") !=
                  std::string::npos ||
              message.find("ncclGroupEnd failed: invalid argument") !=
                  std::string::npos)
      << message;
  // Later calls on the aborted communicator fail at once, saying why.
  DeviceTensor x(randomTensor({4, 2}, 10)), y({4, 2});
  gdn_tensor_t in = x.tensor(), out = y.tensor();
  EXPECT_EQ(gdnrt_all_gather(context, GDNRT_GROUP_CP, 1, &in, &out, 0, nullptr),
            GDN_ERROR_NCCL);
  EXPECT_NE(std::string(gdnrt_last_error()).find("communicator was aborted"),
            std::string::npos)
      << gdnrt_last_error();
}

//===--- P ranks, under gdnrt-launch ---------------------------------------===//

class MultiRank : public Runtime {
protected:
  void SetUp() override {
    const char *size = std::getenv("GDNRT_WORLD_SIZE");
    if (!size || std::atoi(size) < 2)
      GTEST_SKIP() << "run under gdnrt-launch -n P with P >= 2 GPUs";
    Runtime::SetUp();
    GDN_OK(gdnrt_context_set_timeout(context, 60000));
    // One rendezvous per job (a file rendezvous refuses a second use), so
    // the world communicator outlives the tests; each test binds it.
    if (!world) {
      GDN_OK(gdnrt_comm_from_environment(context, &world));
    }
    GDN_OK(gdnrt_context_bind(context, GDNRT_GROUP_CP, world));
    P = gdnrt_comm_size(world);
    rank = gdnrt_comm_rank(world);
  }
  /// Rank q's input of case `c`: every rank can make every rank's.
  static Tensor inputOf(int q, int c, std::vector<int64_t> shape) {
    return randomTensor(std::move(shape), 1000 * c + q);
  }
  static inline gdnrt_comm_t *world = nullptr;
  int P = 1, rank = 0;
};

TEST_F(MultiRank, GathersScattersAndExchanges) {
  using namespace gdnrt::reference;
  for (int dim : {0, 1}) {
    std::vector<Tensor> all;
    for (int q = 0; q < P; ++q)
      all.push_back(inputOf(q, dim, {4, 3, 2}));
    DeviceTensor x(all[rank]);
    Tensor expected = concat(all, dim);
    DeviceTensor out(expected.shape);
    gdn_tensor_t in = x.tensor(), o = out.tensor();
    DeviceBuffer workspace(gdnrt_all_gather_workspace_bytes(&in, P, dim));
    GDN_OK(gdnrt_all_gather(context, GDNRT_GROUP_CP, P, &in, &o, dim,
                            workspace.data));
    GDN_OK(gdnrt_comm_wait(world, context));
    expectNear(expected, out.fetch(), 0, "all_gather dim " + std::to_string(dim));

    std::vector<int64_t> big = {4, 3, 2};
    big[dim] *= P;
    std::vector<Tensor> summands;
    Tensor sum(big);
    for (int q = 0; q < P; ++q) {
      summands.push_back(inputOf(q, 10 + dim, big));
      for (size_t i = 0; i < sum.data.size(); ++i)
        sum.data[i] += summands.back().data[i];
    }
    DeviceTensor s(summands[rank]);
    Tensor mine = slice(sum, dim, P, rank);
    DeviceTensor scattered(mine.shape);
    gdn_tensor_t si = s.tensor(), so = scattered.tensor();
    DeviceBuffer rs(gdnrt_reduce_scatter_workspace_bytes(&si, P, dim));
    GDN_OK(gdnrt_reduce_scatter(context, GDNRT_GROUP_CP, P, &si, &so, dim,
                                rs.data));
    GDN_OK(gdnrt_comm_wait(world, context));
    expectNear(mine, scattered.fetch(), 1e-13, "reduce_scatter");
  }
  for (auto [split, concatDim] : {std::pair{1, 0}, std::pair{0, 1}}) {
    std::vector<Tensor> all;
    for (int q = 0; q < P; ++q)
      all.push_back(inputOf(q, 20 + split, {2 * P, 3 * P, 2}));
    std::vector<Tensor> pieces;
    for (int q = 0; q < P; ++q)
      pieces.push_back(slice(all[q], split, P, rank));
    Tensor expected = concat(pieces, concatDim);
    DeviceTensor x(all[rank]), out(expected.shape);
    gdn_tensor_t in = x.tensor(), o = out.tensor();
    DeviceBuffer workspace(
        gdnrt_all_to_all_workspace_bytes(&in, P, split, concatDim));
    GDN_OK(gdnrt_all_to_all(context, GDNRT_GROUP_CP, P, &in, &o, split,
                            concatDim, workspace.data));
    GDN_OK(gdnrt_comm_wait(world, context));
    expectNear(expected, out.fetch(), 0, "all_to_all");
  }
  // The halo (3 rows, shards of 2: it reaches two ranks back).
  std::vector<Tensor> shards;
  for (int q = 0; q < P; ++q)
    shards.push_back(inputOf(q, 30, {2, 5}));
  Tensor whole = concat(shards, 0), expectedHalo({3, 5});
  for (int64_t i = 0; i < 3; ++i) {
    int64_t row = rank * 2 - 3 + i;
    for (int c = 0; c < 5 && row >= 0; ++c)
      expectedHalo.data[i * 5 + c] = whole.data[row * 5 + c];
  }
  DeviceTensor shard(shards[rank]), halo({3, 5});
  gdn_tensor_t in = shard.tensor(), h = halo.tensor();
  GDN_OK(gdnrt_halo_exchange(context, GDNRT_GROUP_CP, P, &in, &h));
  GDN_OK(gdnrt_comm_wait(world, context));
  expectNear(expectedHalo, halo.fetch(), 0, "halo");
  // The state chain, both ways.
  std::vector<Tensor> M, S;
  for (int q = 0; q < P; ++q) {
    M.push_back(inputOf(q, 40, {2, 4, 4}));
    S.push_back(inputOf(q, 41, {2, 4, 3}));
  }
  Tensor expectedState = chain(M, S)[rank];
  for (gdnrt_chain_t kind : {GDNRT_CHAIN_ALL_GATHER, GDNRT_CHAIN_SCAN}) {
    DeviceTensor m(M[rank]), s(S[rank]), incoming({2, 4, 3});
    gdn_tensor_t mt = m.tensor(), st = s.tensor(), it = incoming.tensor();
    DeviceBuffer workspace(gdnrt_state_exchange_workspace_bytes(&st, P, kind));
    GDN_OK(gdnrt_state_exchange(context, GDNRT_GROUP_CP, P, &mt, &st, &it,
                                kind, workspace.data));
    GDN_OK(gdnrt_comm_wait(world, context));
    expectNear(expectedState, incoming.fetch(), 1e-12, "state_exchange");
  }
}

TEST_F(MultiRank, GridSplitPutsSequenceParallelismInnermost) {
  using namespace gdnrt::reference;
  for (int spSize : {1, P}) {
    gdnrt_comm_t *sp = nullptr, *cp = nullptr;
    GDN_OK(gdnrt_comm_split_grid(world, spSize, &sp, &cp));
    EXPECT_EQ(gdnrt_comm_size(sp), spSize);
    EXPECT_EQ(gdnrt_comm_rank(sp), rank % spSize);
    EXPECT_EQ(gdnrt_comm_size(cp), P / spSize);
    EXPECT_EQ(gdnrt_comm_rank(cp), rank / spSize);
    GDN_OK(gdnrt_context_bind(context, GDNRT_GROUP_SP, sp));
    // Gathering over the SP group concatenates the ranks of this rank's row
    // of the grid, in SP order.
    const int row = rank / spSize;
    std::vector<Tensor> members;
    for (int s = 0; s < spSize; ++s)
      members.push_back(inputOf(row * spSize + s, 50, {2, 3}));
    Tensor expected = concat(members, 0);
    DeviceTensor x(members[rank % spSize]), out(expected.shape);
    gdn_tensor_t in = x.tensor(), o = out.tensor();
    GDN_OK(gdnrt_all_gather(context, GDNRT_GROUP_SP, spSize, &in, &o, 0,
                            nullptr));
    GDN_OK(gdnrt_comm_wait(sp, context));
    expectNear(expected, out.fetch(), 0, "SP all_gather");
    GDN_OK(gdnrt_context_bind(context, GDNRT_GROUP_SP, nullptr));
    GDN_OK(gdnrt_comm_destroy(sp));
    GDN_OK(gdnrt_comm_destroy(cp));
  }
}

//===--- Every collective on P ranks, whatever the backend ----------------===//

/// One rank as the checks below see it: its context (the communicator bound
/// to the CP role), the group's size and its rank.
struct RankView {
  gdnrt_context_t *context;
  gdnrt_comm_t *comm;
  int P, rank;
};

/// Rank q's input of case `c`: every rank can make every rank's.
Tensor inputOf(int q, int c, std::vector<int64_t> shape) {
  return randomTensor(std::move(shape), 1000 * c + q);
}

/// Gathers, scatters, exchanges, the halo and both state chains against
/// CollectiveReference.h, f64.
void checkForwardCollectives(const RankView &v) {
  using namespace gdnrt::reference;
  const int P = v.P, rank = v.rank;
  gdnrt_context_t *context = v.context;
  for (int dim : {0, 1, 2}) {
    const std::string at = " P=" + std::to_string(P) + " dim " +
                           std::to_string(dim) + " rank " +
                           std::to_string(rank);
    std::vector<Tensor> all;
    for (int q = 0; q < P; ++q)
      all.push_back(inputOf(q, 100 + dim, {4, 3, 2}));
    Tensor expected = concat(all, dim);
    DeviceTensor x(all[rank]), gathered(expected.shape);
    gdn_tensor_t in = x.tensor(), out = gathered.tensor();
    DeviceBuffer workspace(gdnrt_all_gather_workspace_bytes(&in, P, dim));
    GDN_OK(gdnrt_all_gather(context, GDNRT_GROUP_CP, P, &in, &out, dim,
                            workspace.data));
    // The whole tensor's block `rank` again, and back into a zero tensor.
    DeviceTensor shard(all[rank].shape), unsharded(expected.shape);
    gdn_tensor_t sh = shard.tensor(), un = unsharded.tensor();
    GDN_OK(gdnrt_local_shard(context, GDNRT_GROUP_CP, P, &out, &sh, dim));
    GDN_OK(gdnrt_local_unshard(context, GDNRT_GROUP_CP, P, &in, &un, dim));
    std::vector<int64_t> big = {4, 3, 2};
    big[dim] *= P;
    std::vector<Tensor> summands;
    for (int q = 0; q < P; ++q)
      summands.push_back(inputOf(q, 110 + dim, big));
    Tensor mine = slice(sum(summands), dim, P, rank);
    DeviceTensor s(summands[rank]), scattered(mine.shape);
    gdn_tensor_t si = s.tensor(), so = scattered.tensor();
    DeviceBuffer rs(gdnrt_reduce_scatter_workspace_bytes(&si, P, dim));
    GDN_OK(gdnrt_reduce_scatter(context, GDNRT_GROUP_CP, P, &si, &so, dim,
                                rs.data));
    GDN_OK(gdnrt_comm_wait(v.comm, context));
    expectNear(expected, gathered.fetch(), 0, "all_gather" + at);
    expectNear(all[rank], shard.fetch(), 0, "local_shard" + at);
    expectNear(unshard(all[rank], dim, P, rank), unsharded.fetch(), 0,
               "local_unshard" + at);
    expectNear(mine, scattered.fetch(), 1e-13, "reduce_scatter" + at);
  }
  for (auto [split, concatDim] :
       {std::pair{1, 0}, std::pair{0, 1}, std::pair{2, 0}}) {
    std::vector<Tensor> all;
    for (int q = 0; q < P; ++q)
      all.push_back(inputOf(q, 120 + split, {2 * P, 3 * P, P}));
    std::vector<Tensor> pieces;
    for (int q = 0; q < P; ++q)
      pieces.push_back(slice(all[q], split, P, rank));
    Tensor expected = concat(pieces, concatDim);
    DeviceTensor x(all[rank]), out(expected.shape);
    gdn_tensor_t in = x.tensor(), o = out.tensor();
    DeviceBuffer workspace(
        gdnrt_all_to_all_workspace_bytes(&in, P, split, concatDim));
    GDN_OK(gdnrt_all_to_all(context, GDNRT_GROUP_CP, P, &in, &o, split,
                            concatDim, workspace.data));
    GDN_OK(gdnrt_comm_wait(v.comm, context));
    expectNear(expected, out.fetch(), 0, "all_to_all");
  }
  // Halos longer than shards, and empty shards.
  for (auto [rows, length] :
       {std::pair<int64_t, int64_t>{2, 3}, {0, 5}, {5, 1}}) {
    std::vector<Tensor> shards;
    for (int q = 0; q < P; ++q)
      shards.push_back(inputOf(q, 130 + rows, {rows, 5}));
    DeviceTensor shard(shards[rank]), received({length, 5});
    gdn_tensor_t in = shard.tensor(), h = received.tensor();
    GDN_OK(gdnrt_halo_exchange(context, GDNRT_GROUP_CP, P, &in, &h));
    GDN_OK(gdnrt_comm_wait(v.comm, context));
    expectNear(halo(shards, rank, length), received.fetch(), 0,
               "halo of " + std::to_string(length) + " rows, shards of " +
                   std::to_string(rows));
  }
  std::vector<Tensor> M, S;
  for (int q = 0; q < P; ++q) {
    M.push_back(inputOf(q, 140, {2, 4, 4}));
    S.push_back(inputOf(q, 141, {2, 4, 3}));
  }
  Tensor expectedState = chain(M, S)[rank];
  for (gdnrt_chain_t kind : {GDNRT_CHAIN_ALL_GATHER, GDNRT_CHAIN_SCAN}) {
    DeviceTensor m(M[rank]), s(S[rank]), incoming({2, 4, 3});
    gdn_tensor_t mt = m.tensor(), st = s.tensor(), it = incoming.tensor();
    DeviceBuffer workspace(gdnrt_state_exchange_workspace_bytes(&st, P, kind));
    GDN_OK(gdnrt_state_exchange(context, GDNRT_GROUP_CP, P, &mt, &st, &it, kind,
                                workspace.data));
    GDN_OK(gdnrt_comm_wait(v.comm, context));
    expectNear(expectedState, incoming.fetch(), 1e-12, "state_exchange");
  }
}

/// The backward's collectives against CollectiveReference.h, f64.
void checkTransposedCollectives(const RankView &v) {
  using namespace gdnrt::reference;
  const int P = v.P, rank = v.rank;
  gdnrt_context_t *context = v.context;
  const std::string at =
      " P=" + std::to_string(P) + " rank " + std::to_string(rank);
  std::vector<Tensor> summands;
  for (int q = 0; q < P; ++q)
    summands.push_back(inputOf(q, 150, {3, 7}));
  DeviceTensor x(summands[rank]), reduced({3, 7}), inPlace(summands[rank]);
  gdn_tensor_t in = x.tensor(), r = reduced.tensor(), ip = inPlace.tensor();
  GDN_OK(gdnrt_all_reduce(context, GDNRT_GROUP_CP, P, &in, &r, nullptr));
  GDN_OK(gdnrt_all_reduce(context, GDNRT_GROUP_CP, P, &ip, &ip, nullptr));
  DeviceTensor partial({3, 7});
  gdn_tensor_t pt = partial.tensor();
  GDN_OK(gdnrt_replicated_to_partial(context, GDNRT_GROUP_CP, P, &in, &pt));
  GDN_OK(gdnrt_comm_wait(v.comm, context));
  expectNear(sum(summands), reduced.fetch(), 1e-13, "all_reduce" + at);
  expectNear(sum(summands), inPlace.fetch(), 1e-13, "all_reduce in place" + at);
  expectNear(rank == 0 ? summands[0] : Tensor({3, 7}), partial.fetch(), 0,
             "replicated_to_partial" + at);
  for (int64_t rows : {0, 2, 5})
    for (int64_t length : {1, 3, 7}) {
      std::vector<Tensor> grads, dests;
      for (int q = 0; q < P; ++q) {
        grads.push_back(inputOf(q, 160 + length, {length, 3}));
        dests.push_back(inputOf(q, 170 + rows, {rows, 3}));
      }
      DeviceTensor g(grads[rank]), d(dests[rank]), out({rows, 3}),
          onto(dests[rank]);
      gdn_tensor_t gt = g.tensor(), dt = d.tensor(), ot = out.tensor(),
                   ontoT = onto.tensor();
      DeviceBuffer workspace(gdnrt_return_halo_workspace_bytes(&gt, &dt, P));
      GDN_OK(gdnrt_return_halo(context, GDNRT_GROUP_CP, P, &gt, &dt, &ot,
                               workspace.data));
      // output == dest
      GDN_OK(gdnrt_return_halo(context, GDNRT_GROUP_CP, P, &gt, &ontoT, &ontoT,
                               workspace.data));
      GDN_OK(gdnrt_comm_wait(v.comm, context));
      const Tensor expected = returnHalo(grads, dests)[rank];
      const std::string where = " halo " + std::to_string(length) + " shards " +
                                std::to_string(rows) + at;
      expectNear(expected, out.fetch(), 1e-13, "return_halo" + where);
      expectNear(expected, onto.fetch(), 1e-13, "return_halo in place" + where);
    }
  std::vector<Tensor> M, S, dIn;
  for (int q = 0; q < P; ++q) {
    M.push_back(inputOf(q, 180, {2, 4, 4}));
    S.push_back(inputOf(q, 181, {2, 4, 3}));
    dIn.push_back(inputOf(q, 182, {2, 4, 3}));
  }
  auto [dM, dS] = reverseChain(M, S, dIn);
  for (gdnrt_chain_t kind : {GDNRT_CHAIN_ALL_GATHER, GDNRT_CHAIN_SCAN}) {
    DeviceTensor m(M[rank]), s(S[rank]), d(dIn[rank]), gm({2, 4, 4}),
        gs({2, 4, 3});
    gdn_tensor_t mt = m.tensor(), st = s.tensor(), dt = d.tensor(),
                 gmt = gm.tensor(), gst = gs.tensor();
    DeviceBuffer workspace(
        gdnrt_reverse_state_exchange_workspace_bytes(&st, P, kind));
    GDN_OK(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, P, &dt, &mt,
                                        &st, &gmt, &gst, kind, workspace.data));
    GDN_OK(gdnrt_comm_wait(v.comm, context));
    expectNear(dM[rank], gm.fetch(), 1e-12, "transition_grad" + at);
    expectNear(dS[rank], gs.fetch(), 1e-12, "partial_grad" + at);
  }
}

TEST_F(MultiRank, TransposedCollectives) {
  checkTransposedCollectives({context, world, P, rank});
}

//===--- Threads: P ranks as threads of this process ----------------------===//

int deviceCount() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

/// A fresh group name per job.
std::string freshGroup(const char *test) {
  static std::atomic<int> jobs{0};
  return std::string("threads:gpu-") + test + "-" + std::to_string(getpid()) +
         "-" + std::to_string(jobs++);
}

/// One thread rank: its device, stream and context, and its communicator
/// of the job's threads group (bound to both roles). Frees them in order.
struct ThreadRank {
  int rank = 0, size = 1, device = 0;
  cudaStream_t stream = nullptr;
  gdnrt_context_t *context = nullptr;
  gdnrt_comm_t *comm = nullptr;
  RankView view() const { return {context, comm, size, rank}; }
  ~ThreadRank() {
    if (stream)
      cudaStreamSynchronize(stream);
    gdnrt_comm_destroy(comm);
    gdnrt_context_destroy(context);
    if (stream)
      cudaStreamDestroy(stream);
  }
};

/// Runs `body` on P thread ranks of one fresh threads group, on device 0
/// (`spread`: device r % devices). The group is joined with a generous
/// timeout (a context takes a while to make); `timeoutMs` is the
/// collectives'. Returns once every rank has.
void runThreadRanks(int P, const char *test,
                    const std::function<void(ThreadRank &)> &body,
                    int64_t timeoutMs = 20000, bool spread = false) {
  const std::string name = freshGroup(test);
  const int devices = deviceCount();
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      ThreadRank me;
      me.rank = r;
      me.size = P;
      me.device = spread ? r % devices : 0;
      CUDA_OK(cudaSetDevice(me.device));
      CUDA_OK(cudaStreamCreate(&me.stream));
      GDN_OK(gdnrt_context_create(me.device, me.stream, &me.context));
      GDN_OK(gdnrt_context_set_timeout(me.context, 60000));
      GDN_OK(gdnrt_comm_bootstrap(me.context, name.c_str(), r, P, &me.comm));
      EXPECT_EQ(gdnrt_comm_nccl(me.comm), nullptr);
      GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_CP, me.comm));
      GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_SP, me.comm));
      GDN_OK(gdnrt_context_set_timeout(me.context, timeoutMs));
      body(me);
    });
  for (std::thread &thread : threads)
    thread.join();
}

#define SKIP_WITHOUT_GPU()                                                     \
  if (deviceCount() == 0)                                                      \
  GTEST_SKIP() << "no CUDA device"

TEST(Threads, EveryCollectiveMatchesItsDefinition) {
  SKIP_WITHOUT_GPU();
  for (int P : {1, 2, 3, 4})
    runThreadRanks(P, "every", [](ThreadRank &me) {
      checkForwardCollectives(me.view());
      checkTransposedCollectives(me.view());
    });
}

uint16_t toF16(float value) {
  // Normal numbers only (the test's values are), rounded to nearest even.
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000;
  if ((bits & 0x7fffffff) == 0)
    return static_cast<uint16_t>(sign);
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = (bits & 0x7fffff) >> 13;
  const uint32_t rest = bits & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (mantissa & 1)))
    if (++mantissa == 0x400) {
      mantissa = 0;
      ++exponent;
    }
  return static_cast<uint16_t>(sign | (exponent << 10) | mantissa);
}

float fromF16(uint16_t value) {
  const uint32_t sign = static_cast<uint32_t>(value & 0x8000) << 16;
  const int exponent = (value >> 10) & 0x1f;
  const uint32_t mantissa = value & 0x3ff;
  if (exponent == 0) // zero or subnormal
    return (sign ? -1.0f : 1.0f) *
           std::ldexp(static_cast<float>(mantissa), -24);
  const uint32_t bits = sign |
                        (static_cast<uint32_t>(exponent - 15 + 127) << 23) |
                        (mantissa << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// `count` values of `dtype` for rank `rank`: their bytes, and the values
/// they hold (as f64).
std::vector<char> valuesOf(gdn_dtype_t dtype, int64_t count, unsigned seed,
                           std::vector<double> &exact) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::uniform_int_distribution<int> sixteenths(-256, 256);
  std::vector<char> bytes(count * elementBytes(dtype));
  exact.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == GDN_BF16) {
      uint16_t bf16 = toBf16(static_cast<float>(uniform(rng)));
      exact[i] = fromBf16(bf16);
      std::memcpy(bytes.data() + 2 * i, &bf16, 2);
    } else if (dtype == GDN_F16) {
      // k / 256 is exact in f16 (and away from its subnormals).
      int k = sixteenths(rng);
      uint16_t f16 = toF16(static_cast<float>(k == 0 ? 1 : k) / 256);
      exact[i] = fromF16(f16);
      std::memcpy(bytes.data() + 2 * i, &f16, 2);
    } else if (dtype == GDN_F32) {
      float f32 = static_cast<float>(uniform(rng));
      exact[i] = f32;
      std::memcpy(bytes.data() + 4 * i, &f32, 4);
    } else {
      exact[i] = uniform(rng);
      std::memcpy(bytes.data() + 8 * i, &exact[i], 8);
    }
  }
  return bytes;
}

double valueAt(gdn_dtype_t dtype, const std::vector<char> &bytes, int64_t i) {
  uint16_t half;
  float f32;
  double f64;
  switch (dtype) {
  case GDN_BF16:
    std::memcpy(&half, bytes.data() + 2 * i, 2);
    return fromBf16(half);
  case GDN_F16:
    std::memcpy(&half, bytes.data() + 2 * i, 2);
    return fromF16(half);
  case GDN_F32:
    std::memcpy(&f32, bytes.data() + 4 * i, 4);
    return f32;
  default:
    std::memcpy(&f64, bytes.data() + 8 * i, 8);
    return f64;
  }
}

TEST(Threads, AllReduceIsBitIdenticalAcrossRanksAndRuns) {
  // Every rank adds the same pieces in rank order with one GEMM: the same
  // bits on every rank, on a second run (in place) and on a second job
  // (fresh contexts). 4097 elements pad each piece's row in the scratch.
  SKIP_WITHOUT_GPU();
  for (gdn_dtype_t dtype : {GDN_BF16, GDN_F16, GDN_F32, GDN_F64})
    for (int P : {2, 3, 4})
      for (int64_t count : {int64_t(1000), int64_t(4097)}) {
        SCOPED_TRACE(std::string(dtype == GDN_BF16  ? "bf16"
                                 : dtype == GDN_F16 ? "f16"
                                 : dtype == GDN_F32 ? "f32"
                                                    : "f64") +
                     " P=" + std::to_string(P) + " n=" + std::to_string(count));
        std::vector<std::vector<char>> inputs(P);
        std::vector<double> total(count, 0.0), exact;
        for (int q = 0; q < P; ++q) {
          inputs[q] = valuesOf(dtype, count, 500 + q, exact);
          for (int64_t i = 0; i < count; ++i)
            total[i] += exact[i];
        }
        // results[run][rank]
        std::vector<std::vector<std::vector<char>>> results(
            3, std::vector<std::vector<char>>(P));
        for (int job = 0; job < 2; ++job)
          runThreadRanks(P, "bits", [&](ThreadRank &me) {
            const size_t bytes = inputs[me.rank].size();
            DeviceBuffer in(bytes), out(bytes);
            in.upload(inputs[me.rank].data());
            gdn_tensor_t ti = describe(in, {count}, dtype),
                         to = describe(out, {count}, dtype);
            for (int run :
                 job == 0 ? std::vector<int>{0, 1} : std::vector<int>{2}) {
              CUDA_OK(cudaMemset(out.data, 0x7f, bytes));
              if (run == 1) { // in place
                CUDA_OK(cudaMemcpy(out.data, in.data, bytes,
                                   cudaMemcpyDeviceToDevice));
                GDN_OK(gdnrt_all_reduce(me.context, GDNRT_GROUP_CP, P, &to, &to,
                                        nullptr));
              } else {
                GDN_OK(gdnrt_all_reduce(me.context, GDNRT_GROUP_CP, P, &ti, &to,
                                        nullptr));
              }
              GDN_OK(gdnrt_comm_wait(me.comm, me.context));
              results[run][me.rank] = out.download<char>();
            }
          });
        const double tolerance = dtype == GDN_BF16  ? 8e-3
                                 : dtype == GDN_F16 ? 1e-3
                                 : dtype == GDN_F32 ? 1e-6
                                                    : 1e-14;
        for (int64_t i = 0; i < count; ++i)
          ASSERT_NEAR(valueAt(dtype, results[0][0], i), total[i],
                      tolerance * (1 + std::abs(total[i])))
              << "element " << i;
        for (int run = 0; run < 3; ++run)
          for (int r = 0; r < P; ++r)
            ASSERT_EQ(results[run][r], results[0][0])
                << "run " << run << " rank " << r;
      }
}

void CUDART_CB sleepOnStream(void *milliseconds) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(*static_cast<const int *>(milliseconds)));
}

TEST_F(OneRank, PendingCollectivesNameTheFirstUnfinished) {
  // What communicate() does around each NCCL group (begin before, end
  // after), with the stream held by the host instead of by a missing peer.
  static const int busy500 = 500;
  gdnrt::PendingCollectives pending(device);
  // (a) Stuck in a group: the stream passed its beginning, not its end.
  pending.begin(stream);
  CUDA_OK(
      cudaLaunchHostFunc(stream, sleepOnStream, const_cast<int *>(&busy500)));
  pending.end("gdnrt_all_gather", stream, 1);
  pending.begin(stream);
  pending.end("gdnrt_reduce_scatter", stream, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  gdnrt::PendingCollectives::Unfinished stuck = pending.firstUnfinished();
  EXPECT_EQ(stuck.call, "gdnrt_all_gather");
  EXPECT_EQ(stuck.number, 1u);
  EXPECT_TRUE(stuck.reached);
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_EQ(pending.firstUnfinished().number, 0u);
  // (b) Stuck before a group, in other work on the stream: the ones that
  // ran are forgotten as the next begins.
  CUDA_OK(
      cudaLaunchHostFunc(stream, sleepOnStream, const_cast<int *>(&busy500)));
  pending.begin(stream);
  pending.end("gdnrt_halo_exchange", stream, 4);
  stuck = pending.firstUnfinished();
  EXPECT_EQ(stuck.call, "gdnrt_halo_exchange");
  EXPECT_EQ(stuck.number, 4u);
  EXPECT_FALSE(stuck.reached);
  CUDA_OK(cudaStreamSynchronize(stream));
  pending.clear();
  // (c) A stream being captured into a CUDA graph records nothing (its
  // events must not be queried), leaves no error behind, and names nothing
  // until the stream is found idle.
  cudaStream_t captured = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&captured, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(captured, cudaStreamCaptureModeThreadLocal));
  pending.begin(captured);
  pending.end("gdnrt_all_reduce", captured, 5);
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamEndCapture(captured, &graph));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(pending.firstUnfinished().number, 0u);
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(captured));
  pending.clear();
  CUDA_OK(
      cudaLaunchHostFunc(stream, sleepOnStream, const_cast<int *>(&busy500)));
  pending.begin(stream);
  pending.end("gdnrt_all_to_all", stream, 6);
  EXPECT_EQ(pending.firstUnfinished().number, 6u);
  CUDA_OK(cudaStreamSynchronize(stream));
}

/// Holds `comm`'s stream inside (or, with `inside` false, before) a
/// collective group the way communicate() records one, with the host
/// holding the stream for `milliseconds` instead of a missing peer.
void holdStream(gdnrt_comm_t *comm, cudaStream_t stream, int device,
                const int *milliseconds, bool inside) {
  std::lock_guard<std::mutex> guard(comm->lock);
  if (!comm->pending)
    comm->pending = std::make_shared<gdnrt::PendingCollectives>(device);
  if (!inside) {
    CUDA_OK(cudaLaunchHostFunc(stream, sleepOnStream,
                               const_cast<int *>(milliseconds)));
  }
  comm->pending->begin(stream);
  if (inside) {
    CUDA_OK(cudaLaunchHostFunc(stream, sleepOnStream,
                               const_cast<int *>(milliseconds)));
  }
  comm->pending->end("gdnrt_all_gather", stream, ++comm->entered);
}

/// Waits up to `limit` for `comm` to be aborted; its reason, or "".
std::string abortedWithin(gdnrt_comm_t *comm, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::string reason = gdnrt::brokenReason(comm); !reason.empty())
      return reason;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

TEST_F(OneRank, WatchdogAbortsAStreamStuckInACollectiveWithNoWaiter) {
  // Nobody calls gdnrt_comm_wait: the watchdog alone must abort the
  // communicator within the timeout and a tick, name the collective, and
  // make every later call fail with that reason.
  // The short timeout is set once the communicator exists: NCCL's first
  // initialisation in a process can itself take longer than 300 ms.
  ASSERT_NO_FATAL_FAILURE(makeOneRankComm());
  GDN_OK(gdnrt_context_set_timeout(context, 300));
  static const int busy2000 = 2000;
  const auto start = std::chrono::steady_clock::now();
  holdStream(comm, stream, device, &busy2000, /*inside=*/true);
  const std::string reason = abortedWithin(comm, std::chrono::milliseconds(1500));
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  ASSERT_FALSE(reason.empty()) << "not aborted within 1.5 s";
  EXPECT_GE(seconds, 0.3);
  EXPECT_LT(seconds, 1.0);
  EXPECT_NE(reason.find("rank 0 of 1: the stream stayed"), std::string::npos)
      << reason;
  EXPECT_NE(reason.find("in gdnrt_all_gather (collective 1 of this "
                        "communicator), past the timeout of 300 ms"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("found by gdnrt's watchdog"), std::string::npos)
      << reason;
  EXPECT_EQ(gdnrt_comm_wait(comm, context), GDN_ERROR_NCCL);
  EXPECT_NE(std::string(gdnrt_last_error()).find("the communicator was aborted"),
            std::string::npos)
      << gdnrt_last_error();
  DeviceTensor x(randomTensor({4, 2}, 3)), y({4, 2});
  gdn_tensor_t in = x.tensor(), out = y.tensor();
  DeviceBuffer workspace(gdnrt_all_reduce_workspace_bytes(&in, 1));
  // A one-rank group runs no NCCL call: the abort shows at the binding.
  EXPECT_EQ(gdnrt_all_reduce(context, GDNRT_GROUP_CP, 1, &in, &out,
                             workspace.data),
            GDN_ERROR_NCCL);
  EXPECT_NE(std::string(gdnrt_last_error()).find("found by gdnrt's watchdog"),
            std::string::npos)
      << gdnrt_last_error();
  std::printf("watchdog: aborted after %.2f s: %s\n", seconds, reason.c_str());
  sync();
}

TEST_F(OneRank, WatchdogLeavesAStreamBusyBeforeItsCollective) {
  // A stream held for 3 timeouts by other work before it reaches its next
  // collective (a long GEMM, say) is not stuck in it: no abort, and the
  // wait that follows succeeds.
  ASSERT_NO_FATAL_FAILURE(makeOneRankComm());
  GDN_OK(gdnrt_context_set_timeout(context, 300));
  static const int busy900 = 900;
  holdStream(comm, stream, device, &busy900, /*inside=*/false);
  EXPECT_EQ(abortedWithin(comm, std::chrono::milliseconds(1200)), "");
  sync();
  GDN_OK(gdnrt_comm_wait(comm, context));
}

TEST_F(OneRank, WatchdogOffWithTheEnvironment) {
  // GDNRT_WATCHDOG=0 at the communicator's creation: nothing watches it.
  ASSERT_EQ(setenv("GDNRT_WATCHDOG", "0", 1), 0);
  makeOneRankComm();
  unsetenv("GDNRT_WATCHDOG");
  ASSERT_FALSE(HasFatalFailure());
  GDN_OK(gdnrt_context_set_timeout(context, 200));
  static const int busy800 = 800;
  holdStream(comm, stream, device, &busy800, /*inside=*/true);
  EXPECT_EQ(abortedWithin(comm, std::chrono::milliseconds(700)), "");
  sync();
  GDN_OK(gdnrt_comm_wait(comm, context));
}

TEST(Threads, StreamOrderHoldsOnBothSides) {
  // Rank 0's last two rows are rank 1's halo. (a) Rank 0's stream is busy
  // for 200 ms, then writes the rows, sends, and overwrites them at once:
  // rank 1 must get what was written (the copy waits for the send's event)
  // and not the zeros (the overwrite waits for rank 1's copy). (b) Rank 1's
  // stream is busy for 300 ms before its receive while rank 0 overwrites
  // right after sending: still the rows (rank 0's stream waits for the
  // copy on rank 1's).
  SKIP_WITHOUT_GPU();
  static const int busy200 = 200, busy300 = 300;
  std::vector<double> rows(4 * 8), old(4 * 8, -1.0);
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = 1.0 + static_cast<double>(i);
  runThreadRanks(2, "order", [&](ThreadRank &me) {
    DeviceBuffer shard(rows.size() * 8), halo(2 * 8 * 8);
    shard.upload(old.data());
    double *pinned = nullptr;
    CUDA_OK(cudaMallocHost(&pinned, rows.size() * 8));
    std::copy(rows.begin(), rows.end(), pinned);
    gdn_tensor_t in = describe(shard, {4, 8}, GDN_F64),
                 out = describe(halo, {2, 8}, GDN_F64);
    for (int phase = 0; phase < 2; ++phase) {
      CUDA_OK(cudaMemset(halo.data, 0x7f, halo.bytes));
      // The sender busy first (phase 0) or the receiver (phase 1).
      if ((me.rank == 0) == (phase == 0)) {
        CUDA_OK(cudaLaunchHostFunc(
            me.stream, sleepOnStream,
            const_cast<int *>(phase == 0 ? &busy200 : &busy300)));
      }
      if (me.rank == 0) {
        CUDA_OK(cudaMemcpyAsync(shard.data, pinned, shard.bytes,
                                cudaMemcpyHostToDevice, me.stream));
      }
      GDN_OK(gdnrt_halo_exchange(me.context, GDNRT_GROUP_CP, 2, &in, &out));
      if (me.rank == 0) { // overwrite the source right after the send
        CUDA_OK(cudaMemsetAsync(shard.data, 0, shard.bytes, me.stream));
      }
      GDN_OK(gdnrt_comm_wait(me.comm, me.context));
      if (me.rank == 1) {
        auto got = halo.download<double>();
        for (int i = 0; i < 16; ++i)
          ASSERT_EQ(got[i], rows[16 + i]) << "phase " << phase << " at " << i;
      }
    }
    cudaFreeHost(pinned);
  });
}

TEST(Threads, GridSplitPutsSequenceParallelismInnermost) {
  SKIP_WITHOUT_GPU();
  using namespace gdnrt::reference;
  const int P = 4;
  runThreadRanks(P, "grid", [](ThreadRank &me) {
    for (int spSize : {1, 2, 4}) {
      gdnrt_comm_t *sp = nullptr, *cp = nullptr;
      GDN_OK(gdnrt_comm_split_grid(me.comm, spSize, &sp, &cp));
      const int cpSize = P / spSize, spRank = me.rank % spSize,
                cpRank = me.rank / spSize;
      EXPECT_EQ(gdnrt_comm_size(sp), spSize);
      EXPECT_EQ(gdnrt_comm_rank(sp), spRank);
      EXPECT_EQ(gdnrt_comm_size(cp), cpSize);
      EXPECT_EQ(gdnrt_comm_rank(cp), cpRank);
      GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_SP, sp));
      GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_CP, cp));
      // The SP group is this rank's row of the grid, in SP order; the CP
      // group its column.
      std::vector<Tensor> row, column;
      for (int s = 0; s < spSize; ++s)
        row.push_back(inputOf(cpRank * spSize + s, 190, {2, 3}));
      for (int c = 0; c < cpSize; ++c)
        column.push_back(inputOf(c * spSize + spRank, 191, {2, 3}));
      DeviceTensor x(row[spRank]), gathered(concat(row, 0).shape),
          y(column[cpRank]), reduced({2, 3});
      gdn_tensor_t in = x.tensor(), g = gathered.tensor(), yt = y.tensor(),
                   r = reduced.tensor();
      GDN_OK(gdnrt_all_gather(me.context, GDNRT_GROUP_SP, spSize, &in, &g, 0,
                              nullptr));
      GDN_OK(gdnrt_all_reduce(me.context, GDNRT_GROUP_CP, cpSize, &yt, &r,
                              nullptr));
      GDN_OK(gdnrt_comm_wait(sp, me.context));
      GDN_OK(gdnrt_comm_wait(cp, me.context));
      expectNear(concat(row, 0), gathered.fetch(), 0, "SP all_gather");
      expectNear(sum(column), reduced.fetch(), 1e-13, "CP all_reduce");
      GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_SP, me.comm));
      GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_CP, me.comm));
      GDN_OK(gdnrt_comm_destroy(sp));
      GDN_OK(gdnrt_comm_destroy(cp));
    }
  });
}

/// What gdnrt_run_ranks' ranks report.
struct RunRanksRecord {
  std::atomic<int> ranks{0};
  std::mutex mutex;
  std::string errors;
};

/// A whole P-rank program: its own stream and context, the communicator
/// from the environment, an all-reduce with an exact answer.
int allReduceProgram(int rank, void *user) {
  auto &record = *static_cast<RunRanksRecord *>(user);
  ++record.ranks;
  auto failed = [&](const std::string &what) {
    std::lock_guard<std::mutex> lock(record.mutex);
    record.errors += "rank " + std::to_string(rank) + ": " + what + "\n";
    return 1;
  };
  const int devices = deviceCount();
  cudaStream_t stream = nullptr;
  gdnrt_context_t *context = nullptr;
  gdnrt_comm_t *comm = nullptr;
  if (cudaSetDevice(rank % devices) || cudaStreamCreate(&stream))
    return failed("no stream");
  int result = 0;
  if (gdnrt_context_create(rank % devices, stream, &context) ||
      gdnrt_context_set_timeout(context, 60000) ||
      gdnrt_comm_from_environment(context, &comm) ||
      gdnrt_context_bind(context, GDNRT_GROUP_CP, comm)) {
    result = failed(gdnrt_last_error());
  } else {
    // x[i] = rank + 1 + i: the sum is P (P + 1) / 2 + P i, exact in f32.
    const int P = gdnrt_comm_size(comm);
    std::vector<float> x(5);
    for (int i = 0; i < 5; ++i)
      x[i] = static_cast<float>(gdnrt_comm_rank(comm) + 1 + i);
    DeviceBuffer buffer(5 * 4);
    buffer.upload(x.data());
    gdn_tensor_t t = describe(buffer, {5}, GDN_F32);
    if (gdnrt_all_reduce(context, GDNRT_GROUP_CP, P, &t, &t, nullptr) ||
        gdnrt_comm_wait(comm, context)) {
      result = failed(gdnrt_last_error());
    } else {
      std::vector<float> sum = buffer.download<float>();
      for (int i = 0; i < 5; ++i)
        if (sum[i] != static_cast<float>(P * (P + 1) / 2 + P * i))
          result = failed("element " + std::to_string(i) + " is " +
                          std::to_string(sum[i]));
    }
  }
  gdnrt_comm_destroy(comm);
  gdnrt_context_destroy(context);
  cudaStreamDestroy(stream);
  return result;
}

TEST(Threads, RunRanksRunsOneProgramEitherWay) {
  // Under gdnrt-launch -n P (processes) or -n P --threads, or, outside a
  // launcher, with the environment --threads would set for 3 ranks.
  SKIP_WITHOUT_GPU();
  const char *rank = std::getenv("GDNRT_RANK");
  const char *rendezvous = std::getenv("GDNRT_RENDEZVOUS");
  const bool launched =
      rank || (rendezvous && std::strncmp(rendezvous, "threads:", 8) == 0);
  if (!launched) {
    setenv("GDNRT_WORLD_SIZE", "3", 1);
    setenv("GDNRT_RENDEZVOUS", freshGroup("run-ranks").c_str(), 1);
  }
  const int expected = rank ? 1 : std::atoi(std::getenv("GDNRT_WORLD_SIZE"));
  RunRanksRecord record;
  const int result = gdnrt_run_ranks(allReduceProgram, &record);
  const std::string error = gdnrt_last_error();
  if (!launched) {
    unsetenv("GDNRT_WORLD_SIZE");
    unsetenv("GDNRT_RENDEZVOUS");
  }
  EXPECT_EQ(result, 0) << error << "\n" << record.errors;
  EXPECT_EQ(record.ranks.load(), expected);
  std::printf("gdnrt_run_ranks: %d rank(s) %s\n", record.ranks.load(),
              rank ? "as this process" : "as threads");
}

TEST(Threads, RanksSpreadOverTheDevices) {
  // Two ranks per GPU (both on device 0 with one GPU): the copies between
  // ranks cross devices, and the all-reduce's bits agree anyway.
  SKIP_WITHOUT_GPU();
  const int P = std::min(4, 2 * deviceCount());
  std::vector<std::vector<char>> sums(P);
  runThreadRanks(
      P, "spread",
      [&](ThreadRank &me) {
        int current = -1;
        CUDA_OK(cudaGetDevice(&current));
        EXPECT_EQ(current, me.rank % deviceCount());
        using namespace gdnrt::reference;
        std::vector<Tensor> all;
        for (int q = 0; q < P; ++q)
          all.push_back(inputOf(q, 200, {6, 5}));
        DeviceTensor x(all[me.rank]), gathered({6 * P, 5}), halo({8, 5});
        gdn_tensor_t in = x.tensor(), g = gathered.tensor(), h = halo.tensor();
        GDN_OK(gdnrt_all_gather(me.context, GDNRT_GROUP_CP, P, &in, &g, 0,
                                nullptr));
        GDN_OK(gdnrt_halo_exchange(me.context, GDNRT_GROUP_CP, P, &in, &h));
        std::vector<double> exact;
        std::vector<char> bytes = valuesOf(GDN_F32, 999, 700 + me.rank, exact);
        DeviceBuffer f32(bytes.size());
        f32.upload(bytes.data());
        gdn_tensor_t ft = describe(f32, {999}, GDN_F32);
        GDN_OK(
            gdnrt_all_reduce(me.context, GDNRT_GROUP_CP, P, &ft, &ft, nullptr));
        GDN_OK(gdnrt_comm_wait(me.comm, me.context));
        expectNear(concat(all, 0), gathered.fetch(), 0, "all_gather");
        expectNear(reference::halo(all, me.rank, 8), halo.fetch(), 0, "halo");
        sums[me.rank] = f32.download<char>();
      },
      20000, /*spread=*/true);
  for (int r = 1; r < P; ++r)
    EXPECT_EQ(sums[r], sums[0]) << "rank " << r;
}

/// What a thread rank's failing call returned, and when.
struct Failure {
  int code = -1;
  std::string error;
  double seconds = 0;
};

TEST(Threads, AMissingRankTimesOutNamingIt) {
  // Rank 2 joins but never reaches the all-reduce: the others fail after
  // the 500 ms timeout naming it, and their later calls fail at once.
  SKIP_WITHOUT_GPU();
  std::atomic<int> finished{0};
  std::vector<Failure> failures(3);
  runThreadRanks(
      3, "missing",
      [&](ThreadRank &me) {
        if (me.rank == 2) {
          while (finished < 2)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          return;
        }
        DeviceTensor x(inputOf(me.rank, 210, {4, 2})), y({4, 2});
        gdn_tensor_t in = x.tensor(), out = y.tensor();
        const auto start = std::chrono::steady_clock::now();
        Failure &failure = failures[me.rank];
        failure.code =
            gdnrt_all_reduce(me.context, GDNRT_GROUP_CP, 3, &in, &out, nullptr);
        failure.error = gdnrt_last_error();
        failure.seconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
        EXPECT_EQ(
            gdnrt_all_reduce(me.context, GDNRT_GROUP_CP, 3, &in, &out, nullptr),
            GDN_ERROR_NCCL);
        EXPECT_NE(std::string(gdnrt_last_error())
                      .find("the cp communicator was aborted"),
                  std::string::npos)
            << gdnrt_last_error();
        EXPECT_EQ(gdnrt_comm_wait(me.comm, me.context), GDN_ERROR_NCCL);
        ++finished;
      },
      500);
  for (int r : {0, 1}) {
    const Failure &failure = failures[r];
    EXPECT_EQ(failure.code, GDN_ERROR_TIMEOUT) << failure.error;
    EXPECT_GE(failure.seconds, 0.45);
    EXPECT_LT(failure.seconds, 5.0);
    EXPECT_EQ(failure.error.rfind("gdnrt_all_reduce (rank " +
                                      std::to_string(r) +
                                      " of 3 of the cp group): ",
                                  0),
              0u)
        << failure.error;
    EXPECT_NE(failure.error.find("for rank 2's all_reduce data"),
              std::string::npos)
        << failure.error;
    std::printf("rank %d after %.2f s: %s\n", r, failure.seconds,
                failure.error.c_str());
  }
}

TEST(Threads, ADestroyedCommunicatorFailsTheOthersPromptly) {
  // Rank 1 destroys its communicator mid-job; the others, waiting in an
  // all-gather with a 30 s timeout, fail at once with that reason.
  SKIP_WITHOUT_GPU();
  std::vector<Failure> failures(3);
  runThreadRanks(
      3, "destroyed",
      [&](ThreadRank &me) {
        if (me.rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_CP, nullptr));
          GDN_OK(gdnrt_context_bind(me.context, GDNRT_GROUP_SP, nullptr));
          GDN_OK(gdnrt_comm_destroy(me.comm));
          me.comm = nullptr;
          return;
        }
        DeviceTensor x(inputOf(me.rank, 220, {4, 2})), y({12, 2});
        gdn_tensor_t in = x.tensor(), out = y.tensor();
        const auto start = std::chrono::steady_clock::now();
        Failure &failure = failures[me.rank];
        failure.code = gdnrt_all_gather(me.context, GDNRT_GROUP_CP, 3, &in,
                                        &out, 0, nullptr);
        failure.error = gdnrt_last_error();
        failure.seconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      },
      30000);
  for (int r : {0, 2}) {
    const Failure &failure = failures[r];
    EXPECT_EQ(failure.code, GDN_ERROR_NCCL) << failure.error;
    EXPECT_LT(failure.seconds, 5.0);
    EXPECT_NE(failure.error.find("rank 1 destroyed its communicator"),
              std::string::npos)
        << failure.error;
    std::printf("rank %d after %.2f s: %s\n", r, failure.seconds,
                failure.error.c_str());
  }
}

TEST(Threads, BootstrapNamesTheMissingRankAndRefusesAnotherSize) {
  SKIP_WITHOUT_GPU();
  // Contexts first (they take a while), then the joins with a 500 ms
  // timeout: rank 1 never joins, and in a second job rank 1 asks for
  // another size.
  for (int job = 0; job < 2; ++job) {
    const std::string name = freshGroup("bootstrap");
    std::vector<Failure> failures(3);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    const int P = job == 0 ? 3 : 2;
    for (int r = 0; r < P; ++r)
      threads.emplace_back([&, r] {
        ThreadRank me;
        me.rank = r;
        CUDA_OK(cudaSetDevice(0));
        CUDA_OK(cudaStreamCreate(&me.stream));
        GDN_OK(gdnrt_context_create(0, me.stream, &me.context));
        GDN_OK(gdnrt_context_set_timeout(me.context, 500));
        ++ready;
        while (ready < P)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (job == 0 && r == 1)
          return;
        // Rank 0 starts the group; rank 1 then asks for another size.
        if (job == 1 && r == 1)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const auto start = std::chrono::steady_clock::now();
        failures[r].code = gdnrt_comm_bootstrap(
            me.context, name.c_str(), r, job == 1 && r == 1 ? 3 : P, &me.comm);
        failures[r].error = gdnrt_last_error();
        failures[r].seconds = std::chrono::duration<double>(
                                  std::chrono::steady_clock::now() - start)
                                  .count();
        EXPECT_EQ(me.comm, nullptr);
      });
    for (std::thread &thread : threads)
      thread.join();
    const std::string group = "\"" + name.substr(8) + "\"";
    if (job == 0) {
      for (int r : {0, 2}) {
        EXPECT_EQ(failures[r].code, GDN_ERROR_TIMEOUT);
        EXPECT_GE(failures[r].seconds, 0.45);
        EXPECT_LT(failures[r].seconds, 5.0);
        EXPECT_EQ(failures[r].error,
                  "gdnrt_comm_bootstrap: rank " + std::to_string(r) +
                      " of 3: only 2 of 3 ranks joined the threads group " +
                      group + " within 500 ms (missing ranks: 1)");
      }
    } else {
      EXPECT_EQ(failures[0].code, GDN_ERROR_TIMEOUT);
      EXPECT_EQ(failures[1].code, GDN_ERROR_INVALID_ARGUMENT);
      EXPECT_EQ(failures[1].error,
                "gdnrt_comm_bootstrap: rank 1 of 3: asked for 3 ranks but the "
                "threads group " +
                    group + " has 2 (every rank must pass the same size)");
    }
  }
}

} // namespace
