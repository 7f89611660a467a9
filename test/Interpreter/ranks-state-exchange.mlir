// Known answer for the chunkwise-CP state chain on 4 ranks, K = V = 1:
// transitions M = [2, 3, 5, 7], partial states S = [1, 10, 100, 1000];
// S_in(0) = 0, S_in(r + 1) = M_r S_in(r) + S_r = [0, 1, 13, 165]. The
// all-gather chain and the log-depth scan agree.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %make_npy %t/arg0.npy '<f8' 4,1,1,1 2 3 5 7
// RUN: %make_npy %t/arg1.npy '<f8' 4,1,1,1 1 10 100 1000
// RUN: gdn-run %s --entry=chain_all_gather --inputs=%t --print-values | FileCheck %s
// RUN: gdn-run %s --entry=chain_scan --inputs=%t --print-values | FileCheck %s
// RUN: gdn-run --compare %s %s --entry=chain_scan --compare-entry=chain_all_gather | FileCheck %s --check-prefix=SAME

// CHECK:      result #0: 4x1x1x1xf64
// CHECK-NEXT:   0 1 13 165
// SAME: result #0: {{.*}}  ok

!shard = tensor<1x1x1x1xf64, #gdn.seq<contiguous, ranks = 4>>

func.func @chain_all_gather(%m: !shard, %s: !shard) -> !shard {
  %m3 = tensor.collapse_shape %m [[0, 1], [2], [3]] : !shard into tensor<1x1x1xf64>
  %s3 = tensor.collapse_shape %s [[0, 1], [2], [3]] : !shard into tensor<1x1x1xf64>
  %h = gdn_comm.state_exchange %m3, %s3 {group = #gdn_comm.group<cp, 4>}
      : (tensor<1x1x1xf64>, tensor<1x1x1xf64>) -> tensor<1x1x1xf64>
  %h4 = tensor.expand_shape %h [[0, 1], [2], [3]] output_shape [1, 1, 1, 1]
      : tensor<1x1x1xf64> into !shard
  return %h4 : !shard
}

func.func @chain_scan(%m: !shard, %s: !shard) -> !shard {
  %m3 = tensor.collapse_shape %m [[0, 1], [2], [3]] : !shard into tensor<1x1x1xf64>
  %s3 = tensor.collapse_shape %s [[0, 1], [2], [3]] : !shard into tensor<1x1x1xf64>
  %h = gdn_comm.state_exchange %m3, %s3
      {group = #gdn_comm.group<cp, 4>, chain = #gdn_comm.chain<scan>}
      : (tensor<1x1x1xf64>, tensor<1x1x1xf64>) -> tensor<1x1x1xf64>
  %h4 = tensor.expand_shape %h [[0, 1], [2], [3]] output_shape [1, 1, 1, 1]
      : tensor<1x1x1xf64> into !shard
  return %h4 : !shard
}
