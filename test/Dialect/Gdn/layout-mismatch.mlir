// Layouts are part of the type: mixing a zigzag shard with naturally ordered tokens is rejected, by builtin ops and by gdn ops.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// arith.addf needs equal types, so a shard and a full tensor cannot be added.
func.func @addf_zigzag_natural_generic(%shard: tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>,
                                       %full: tensor<1024x2048xbf16>) {
  // expected-error @+1 {{'arith.addf' op requires the same encoding for all operands and results}}
  %sum = "arith.addf"(%shard, %full) : (tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<1024x2048xbf16>)
      -> tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// In the custom syntax the one type given for both operands does not fit the natural one.
func.func @addf_zigzag_natural(%shard: tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>,
                               %full: tensor<1024x2048xbf16>) {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%full' expects different type than prior uses: 'tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>' vs 'tensor<1024x2048xbf16>'}}
  %sum = arith.addf %shard, %full : tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// Same shape, same rank count, different distribution: still a type error.
func.func @addf_zigzag_contiguous(%a: tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>,
                                  %b: tensor<1024x2048xbf16, #gdn.seq<contiguous, ranks = 4>>) {
  // expected-error @+1 {{'arith.addf' op requires the same encoding for all operands and results}}
  %sum = "arith.addf"(%a, %b) : (tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<1024x2048xbf16, #gdn.seq<contiguous, ranks = 4>>)
      -> tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// A gdn op whose operands are in two layouts is rejected, and the message says how to fix it.
func.func @gdn_op_operands(%o: tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>,
                           %z: tensor<1024x32x128xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{'gdn.gated_rmsnorm' op x, z and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 4> and natural; insert gdn.convert_layout to change a layout}}
  %y = gdn.gated_rmsnorm %o, %z, %w
      : (tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<1024x32x128xbf16>, tensor<128xbf16>)
      -> tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// A token shard and a head shard are different layouts too.
func.func @gdn_op_token_vs_head_shard(%q: tensor<?x4x128xbf16, #gdn.seq<contiguous, ranks = 4>>,
                                      %k: tensor<?x4x128xbf16, #gdn.heads<ranks = 4>>,
                                      %v: tensor<?x8x128xbf16, #gdn.seq<contiguous, ranks = 4>>,
                                      %g: tensor<?x8xf32, #gdn.seq<contiguous, ranks = 4>>,
                                      %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{'gdn.delta_rule' op q, k, v, g, beta and o must share one sequence layout, but found #gdn.seq<contiguous, ranks = 4> and #gdn.heads<ranks = 4>}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %g, %p
      : (tensor<?x4x128xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4x128xbf16, #gdn.heads<ranks = 4>>,
         tensor<?x8x128xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x8xf32, #gdn.seq<contiguous, ranks = 4>>,
         tensor<?x8xf32, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x8x128xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x8x128x128xf32>)
  return
}

// -----

func.func @gdn_op_head_shards(%q: tensor<?x4x128xbf16, #gdn.heads<ranks = 4>>,
                              %k: tensor<?x4x128xbf16, #gdn.heads<ranks = 2>>,
                              %v: tensor<?x8x128xbf16, #gdn.heads<ranks = 4>>, %g: tensor<?x8xf32, #gdn.heads<ranks = 4>>,
                              %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{'gdn.delta_rule' op q, k, v, g, beta and o must share one sequence layout, but found #gdn.heads<ranks = 4> and #gdn.heads<ranks = 2>}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %g, %p
      : (tensor<?x4x128xbf16, #gdn.heads<ranks = 4>>, tensor<?x4x128xbf16, #gdn.heads<ranks = 2>>,
         tensor<?x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<?x8xf32, #gdn.heads<ranks = 4>>, tensor<?x8xf32, #gdn.heads<ranks = 4>>,
         !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<?x8x128x128xf32>)
  return
}

// -----

// The fix the message suggests: convert the natural operand to the shard's layout first.
// This case verifies and prints. gdn ops also treat #gdn.seq<natural> and no
// encoding as one layout.
// CHECK-LABEL: func.func @fixed_with_convert_layout
// CHECK: %[[ZS:.*]] = gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<4096x32x128xbf16, #gdn.seq<natural>>, !gdn.packing<seqs = 2, tokens = 4096>) -> tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>
// CHECK: gdn.gated_rmsnorm %{{.*}}, %[[ZS]], %{{.*}} : (tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<128xbf16>) -> tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4096x32x128xbf16, #gdn.seq<natural>>, tensor<4096x32x128xbf16, #gdn.seq<natural>>, tensor<128xbf16>) -> tensor<4096x32x128xbf16>
func.func @fixed_with_convert_layout(%o: tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>,
                                     %z: tensor<4096x32x128xbf16, #gdn.seq<natural>>, %w: tensor<128xbf16>,
                                     %p: !gdn.packing<seqs = 2, tokens = 4096>) {
  %zs = gdn.convert_layout %z, %p : (tensor<4096x32x128xbf16, #gdn.seq<natural>>, !gdn.packing<seqs = 2, tokens = 4096>)
      -> tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  %y = gdn.gated_rmsnorm %o, %zs, %w
      : (tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<128xbf16>)
      -> tensor<1024x32x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  %n = gdn.l2norm %z : tensor<4096x32x128xbf16, #gdn.seq<natural>>
  %m = gdn.gated_rmsnorm %n, %z, %w
      : (tensor<4096x32x128xbf16, #gdn.seq<natural>>, tensor<4096x32x128xbf16, #gdn.seq<natural>>, tensor<128xbf16>)
      -> tensor<4096x32x128xbf16>
  return
}
