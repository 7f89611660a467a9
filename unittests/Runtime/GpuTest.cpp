//===- GpuTest.cpp - gdnrt on a real GPU, NCCL and cuBLASLt ---------------===//
//
// Needs a GPU (lit: REQUIRES: cuda; scripts/gdnrt-gpu-run.sh on the H200).
//  - OneRank.*: every collective on an NCCL communicator of one rank, the
//    executor's copies and GEMMs against the host, gdnrt_linear and
//    gdnrt_linear_grad (both forms, no tokens, no outputs, the same bits on
//    every run) against host GEMMs, communicators made every way, and the
//    error paths: an unreachable peer times out, a failed NCCL call names
//    itself and aborts the communicator, a wrapped communicator is left to
//    its owner.
//  - MultiRank.*: run under `gdnrt-launch -n P` on P GPUs (skipped
//    otherwise): every collective against CollectiveReference.h.
//  - `--benchmark` (not a test): gdnrt_linear against cuBLASLt called
//    directly on the example layers' projection shapes.
//
//===----------------------------------------------------------------------===//

#include "CollectiveReference.h"
#include "Executor.h"
#include "Internal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

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
    cudaMemcpy(data, host, bytes, cudaMemcpyHostToDevice);
  }
  template <typename T> std::vector<T> download() const {
    std::vector<T> host(bytes / sizeof(T));
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
    if (!world)
      GDN_OK(gdnrt_comm_from_environment(context, &world));
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

} // namespace
